//! `sparkwire spec …`: the definition as text or JSON, the golden vectors, messages.md and the
//! Wireshark dissector.

use std::path::{Path, PathBuf};

use std::process::ExitCode;

use clap::Subcommand;
use sparkwire::definition::Definition;
use sparkwire::wire::vectors::render_files;

#[derive(Debug, Subcommand)]
pub enum SpecCommand {
    /// One line per message: versions, family, name, route (from → to) and kind.
    Messages {
        /// Print a JSON array of objects instead, with the same fields and the message's fields.
        #[arg(long)]
        json: bool,
    },
    /// Write the fuzzers' seed corpus (one directory per target) from the golden vectors.
    FuzzSeeds {
        /// Directory to write to; each target gets a subdirectory.
        #[arg(long, default_value = "fuzz/corpus")]
        out: PathBuf,
    },
    /// Write protocol/messages.md, the per-message reference, from the definition.
    Docs {
        /// File to write.
        #[arg(long, default_value = "protocol/messages.md")]
        out: PathBuf,
        /// Write nothing; exit 1 if the file differs from what would be written.
        #[arg(long)]
        check: bool,
    },
    /// Write the Wireshark dissector (Lua) for sparkwire's wire and Spark's RPC framing.
    Wireshark {
        /// File to write.
        #[arg(long, default_value = "protocol/wireshark/sparkwire.lua")]
        out: PathBuf,
        /// Write nothing; exit 1 if the file differs from what would be written.
        #[arg(long)]
        check: bool,
    },
    /// Write the golden vectors (protocol/vectors/) from the definition and the codec.
    Vectors {
        /// Directory to write to.
        #[arg(long, default_value = "protocol/vectors")]
        out: PathBuf,
        /// Write nothing; exit 1 if any file differs from what would be written.
        #[arg(long)]
        check: bool,
    },
}

pub fn run(cmd: SpecCommand) -> Result<ExitCode, String> {
    let def = Definition::builtin();
    match cmd {
        SpecCommand::Messages { json } => {
            if json {
                let rows: Vec<serde_json::Value> = def
                    .messages
                    .iter()
                    .map(|m| {
                        serde_json::json!({
                            "versions": m.version_range(),
                            "since": m.since,
                            "family": m.family,
                            "name": m.name,
                            "from": m.from,
                            "to": m.to,
                            "route": m.route(),
                            "kind": m.kind.as_str(),
                            "kindV1": m.kind_v1.map(|k| k.as_str()),
                            "reply": m.reply,
                            "fields": m.fields,
                        })
                    })
                    .collect();
                let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                for m in &def.messages {
                    println!(
                        "{:<4} {:<7} {:<36} {:<40} {}",
                        m.version_range(),
                        m.family,
                        m.name,
                        m.route(),
                        m.kind_text()
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SpecCommand::Vectors { out, check } => vectors(def, &out, check),
        SpecCommand::FuzzSeeds { out } => {
            for target in sparkwire::fuzzing::TARGETS {
                let dir = out.join(target);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                let corpus = sparkwire::fuzzing::seeds(target);
                for (i, input) in corpus.iter().enumerate() {
                    let path = dir.join(format!("seed-{i:04}"));
                    std::fs::write(&path, input)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
                println!("{}: {} seeds in {}", target, corpus.len(), dir.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        SpecCommand::Docs { out, check } => {
            let text = sparkwire::definition::markdown::render(def);
            generated_file(&out, &text, check, "docs")
        }
        SpecCommand::Wireshark { out, check } => {
            let text = sparkwire::definition::wireshark::render(def)?;
            generated_file(&out, &text, check, "wireshark")
        }
    }
}

/// Writes `text` to `out` (its directory created), or with `check` only says whether `out`
/// holds it already: exit 1 when it does not. `command` is the `spec` subcommand that writes it.
fn generated_file(out: &Path, text: &str, check: bool, command: &str) -> Result<ExitCode, String> {
    if check {
        must_exist(out)?;
    }
    let current = std::fs::read_to_string(out).ok();
    if current.as_deref() == Some(text) {
        println!("{} is up to date", out.display());
    } else if check {
        eprintln!(
            "{} is stale; run `cargo run -- spec {command}`",
            out.display()
        );
        return Ok(ExitCode::from(1));
    } else {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses to check `path` when it does not exist: most likely the command was not run at the
/// root of the repository (where `protocol/` is), and every file would look stale.
fn must_exist(path: &Path) -> Result<(), String> {
    if path.exists() {
        return Ok(());
    }
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "the current directory".into());
    Err(format!(
        "{} does not exist in {cwd}: run the check at the root of the sparkwire repository \
         (where protocol/ is), or name the path with --out",
        path.display()
    ))
}

fn vectors(def: &Definition, out: &Path, check: bool) -> Result<ExitCode, String> {
    if check {
        must_exist(out)?;
    }
    let mut files: Vec<(PathBuf, String)> = render_files(def)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(rel, text)| (out.join(rel), text))
        .collect();
    files.extend(spark_vector_files(out)?);
    let mut stale = 0usize;
    for (path, text) in &files {
        let current = std::fs::read_to_string(path).ok();
        if current.as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            eprintln!("stale: {}", path.display());
            stale += 1;
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if check {
        if stale > 0 {
            eprintln!(
                "{stale} vector file(s) differ; run `cargo run -- spec vectors` to regenerate"
            );
            return Ok(ExitCode::from(1));
        }
        println!("{} vector files are up to date", files.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// Spark's own streams as golden vectors, one file per class table (`spark/RELEASE.json`, named
/// after the release `protocol/spark/releases.json` names the table by): from the captures in
/// `tests/data/spark/RELEASE/` of the working directory (the repository's root) of a release
/// that has the table, where there are any, else written from the definition's sample values
/// alone. A checkout without
/// `tests/data/spark/` writes and checks none, and says so.
#[cfg(feature = "spark")]
fn spark_vector_files(out: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    use sparkwire::spark::{render_vectors, vectors_text, Release};
    let mut files = Vec::new();
    let data = Path::new("tests/data/spark");
    if !data.is_dir() {
        eprintln!(
            "no {}: the Spark vectors are neither written nor checked",
            data.display()
        );
        return Ok(files);
    }
    for release in Release::all() {
        if !release.names_its_table() {
            continue;
        }
        // The captures of any release that shares the table (3.5.9's speak for 3.5.8's table).
        let captures = Release::all()
            .iter()
            .filter(|r| r.compatible(release))
            .map(|r| data.join(r.name()))
            .find(|dir| dir.is_dir());
        let v = render_vectors(release, captures.as_deref())?;
        files.push((
            out.join("spark").join(format!("{}.json", release.name())),
            vectors_text(&v)?,
        ));
    }
    Ok(files)
}

#[cfg(not(feature = "spark"))]
fn spark_vector_files(_out: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    Ok(Vec::new())
}
