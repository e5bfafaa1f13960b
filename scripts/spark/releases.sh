# The known Spark releases (scripts/spark/releases.txt) for the scripts of scripts/spark/; sourced, not run.
#
#   release_known R      true when R is in releases.txt
#   release_java R       11 or 17: the Java that runs R
#   release_python R     3.8 or 3: the Python R's venv is made from
#   release_line R       3.5 for 3.5.9
#   releases_all         every known release, oldest first
#   releases_newest      the newest patch release of each line, oldest line first
#   release_check R      exits 2 with the list of known releases unless R is one

_releases_file=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/releases.txt

releases_all() { grep -v '^#' "$_releases_file" | awk 'NF { print $1 }'; }
release_known() { releases_all | grep -qxF -- "${1:-}"; }
_release_col() { awk -v r="$1" -v c="$2" '!/^#/ && $1 == r { print $c }' "$_releases_file"; }
release_java() { _release_col "$1" 2; }
release_python() { _release_col "$1" 3; }
release_line() { echo "${1%.*}"; }
releases_newest() { releases_all | awk -F. '{ line = $1 "." $2; if (!(line in last)) order[++n] = line; last[line] = $0 } END { for (i = 1; i <= n; i++) print last[order[i]] }'; }
release_check() { # RELEASE USAGE
  if ! release_known "${1:-}"; then
    {
      [ -n "${1:-}" ] && echo "unknown Spark release: $1"
      echo "usage: ${2:-$0 RELEASE}"
      echo "known releases (scripts/spark/releases.txt):"
      releases_all | awk -F. '{ line = $1 "." $2; if (line != prev && NR > 1) printf "\n"; if (line != prev) printf "  "; printf "%s ", $0; prev = line } END { printf "\n" }'
    } >&2
    exit 2
  fi
}
