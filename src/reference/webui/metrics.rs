//! Writing the Prometheus text exposition format (version 0.0.4).

use std::fmt::Write;

use crate::connection::Counters;

/// A metrics text being written: each family once, with its HELP and TYPE lines.
#[derive(Default)]
pub(crate) struct Metrics {
    out: String,
}

impl Metrics {
    /// Starts family `name` of `kind` (`gauge` or `counter`).
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        self
    }

    /// One sample of the family just started.
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: u64) -> &mut Self {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", label_value(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
        self
    }

    /// A gauge family with one unlabelled sample.
    pub(crate) fn gauge(&mut self, name: &str, help: &str, value: u64) -> &mut Self {
        self.family(name, "gauge", help).sample(name, &[], value)
    }

    /// Frames and bytes by direction and message name (`{prefix}_frames_total`,
    /// `{prefix}_bytes_total`).
    pub(crate) fn traffic(&mut self, prefix: &str, traffic: &Counters) -> &mut Self {
        for (what, help) in [
            ("frames", "Frames sent and received, by message type."),
            (
                "bytes",
                "Bytes sent and received (length prefixes included), by message type.",
            ),
        ] {
            let name = format!("{prefix}_{what}_total");
            self.family(&name, "counter", help);
            for (direction, by_name) in [
                ("sent", &traffic.sent_by_name),
                ("received", &traffic.received_by_name),
            ] {
                for (message, t) in by_name {
                    let v = if what == "frames" { t.frames } else { t.bytes };
                    self.sample(&name, &[("direction", direction), ("message", message)], v);
                }
            }
        }
        self
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_samples_and_escaped_labels() {
        let mut m = Metrics::default();
        m.gauge("x_up", "Up.", 1);
        m.family("x_n", "gauge", "N.")
            .sample("x_n", &[("k", "a\"b\\c")], 7);
        assert_eq!(
            m.finish(),
            "# HELP x_up Up.\n# TYPE x_up gauge\nx_up 1\n# HELP x_n N.\n# TYPE x_n gauge\nx_n{k=\"a\\\"b\\\\c\"} 7\n"
        );
    }
}
