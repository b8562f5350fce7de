#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Sourced by the bench scripts: finds JDK 25 as ./gdrkit does, then gives them progress, failure and output helpers.
#   JAVA=/path/to/java      that java, which must be a Java 25 runtime (checked; no fallback when it is not)
#   JAVA_HOME=/path/to/jdk  else this JDK when it is a Java 25 one, else /usr/lib/jvm/temurin-25*
# After sourcing: $JAVA (a Java 25 java), $JAVA_HOME, $REPO (the repository root), and the functions below.
# The JDK check runs first, before any work, so a wrong path fails at once with exit 2.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_NAME="$(basename "${0%.sh}")"

say() { echo "$BENCH_NAME: $*" >&2; }
die() { echo "$BENCH_NAME: error: $1" >&2; exit "${2:-1}"; }

bench_java_major() { "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }

bench_find_java() {
  if [ -n "${JAVA:-}" ]; then
    [ -x "$JAVA" ] || die "JAVA='$JAVA' is not an executable java" 2
    [ "$(bench_java_major "$JAVA")" = 25 ] || die "JAVA='$JAVA' is not a Java 25 runtime ($("$JAVA" -version 2>&1 | head -n1))" 2
    return 0
  fi
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && [ "$(bench_java_major "$JAVA_HOME/bin/java")" = 25 ]; then
    JAVA="$JAVA_HOME/bin/java"; return 0
  fi
  local d
  for d in /usr/lib/jvm/temurin-25*; do
    if [ -x "$d/bin/java" ]; then JAVA_HOME="$d"; JAVA="$d/bin/java"; return 0; fi
  done
  die "JDK 25 not found (looked at JAVA='${JAVA:-}', JAVA_HOME='${JAVA_HOME:-}' and /usr/lib/jvm/temurin-25*); set JAVA_HOME to a JDK 25" 2
}
bench_find_java
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ]; then JAVA_HOME="$(cd "$(dirname "$JAVA")/.." && pwd)"; fi
export JAVA JAVA_HOME

# bench_out NAME: the output folder, $OUT when set, else ${TMPDIR:-/tmp}/gdrkit-bench/NAME-<UTC time>; created, printed.
bench_out() {
  OUT="${OUT:-${TMPDIR:-/tmp}/gdrkit-bench/$1-$(date -u +%Y%m%dT%H%M%SZ)}"
  mkdir -p "$OUT" || die "cannot create $OUT"
  export OUT
  say "results in $OUT"
}

# bench_stale JAR: true when JAR is missing or a source or pom.xml of the repository is newer (./gdrkit's rule).
bench_stale() {
  [ -f "$1" ] || return 0
  [ -n "$(find "$REPO" -path "$REPO/.git" -prune -o \( -path '*/src/main/*' -o -name pom.xml \) -type f -newer "$1" \
    -print -quit 2>/dev/null)" ]
}

# bench_jar: $JAR when set (must exist, used as is), else cli/target/gdrkit.jar, built with Maven only when it is
# missing or older than the sources (as ./gdrkit does), never on every run.
bench_jar() {
  if [ -n "${JAR:-}" ]; then
    [ -f "$JAR" ] || die "JAR='$JAR' does not exist"
    export JAR
    return 0
  fi
  JAR="$REPO/cli/target/gdrkit.jar"
  if bench_stale "$JAR"; then
    command -v mvn >/dev/null 2>&1 || die "$JAR is missing or older than the sources, and there is no mvn to build it"
    say "building $JAR (missing or older than the sources; JAR=... uses another as is)"
    (cd "$REPO" && JAVA_HOME="$JAVA_HOME" mvn -B -q -ntp -DskipTests package >&2) || die "build failed"
  fi
  export JAR
}

# step LABEL CMD...: runs CMD with progress on stderr; a non-zero exit fails the script, naming the step.
step() {
  local label="$1"; shift
  say "$label"
  local rc=0
  "$@" || rc=$?
  [ "$rc" = 0 ] || die "step failed (exit $rc): $label"
}

# need CMD...: fails unless every command is on PATH (the scripts install nothing themselves).
need() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "'$c' not found on PATH; install it first"; done
}
