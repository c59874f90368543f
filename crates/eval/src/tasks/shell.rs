//! The shell tasks: bash scripts, their tests bash scripts too.

use crate::task::{Language, Round, Task, answer, bash, calls, edit, read, write};

/// The shell tasks.
pub const TASKS: &[Task] = &[FIX_BACKUP, ANSWER_LOGS, NEW_SCRIPT];

// ---- Fix a failing test: names with spaces ----

const FIX_BACKUP: Task = Task {
    name: "shell-fix-backup",
    language: Language::Shell,
    kind: "fix a failing test",
    files: &[
        ("bin/backup.sh", BACKUP),
        ("tests/test_backup.sh", BACKUP_TESTS),
    ],
    prompt: "tests/test_backup.sh fails. Fix bin/backup.sh so that it passes; the test is \
             right.",
    check: r##"
git diff --quiet HEAD -- tests || { echo "the tests were changed"; exit 1; }
bash tests/test_backup.sh 2>&1
"##,
    solution: fix_backup,
};

const BACKUP: &str = r##"#!/usr/bin/env bash
# Usage: backup.sh SOURCE_DIR DEST_DIR
# Copies each regular file of SOURCE_DIR (not its subdirectories) into DEST_DIR with
# the suffix .bak added to its name, then says how many files it copied.
set -eu

src=$1
dest=$2
mkdir -p $dest
count=0
for file in $(ls $src); do
  if [ -f $src/$file ]; then
    cp $src/$file $dest/$file.bak
    count=$((count + 1))
  fi
done
echo "copied $count files"
"##;

const BACKUP_TESTS: &str = r##"#!/usr/bin/env bash
# Tests bin/backup.sh in a scratch directory: bash tests/test_backup.sh
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() {
  echo "FAIL: $1"
  failures=$((failures + 1))
}

mkdir -p "$scratch/my files/nested"
printf 'a\n' >"$scratch/my files/plain.txt"
printf 'b\n' >"$scratch/my files/with space.txt"
printf 'c\n' >"$scratch/my files/nested/inner.txt"

out=$("$here/bin/backup.sh" "$scratch/my files" "$scratch/saved copies" 2>&1) \
  || fail "backup.sh failed: $out"
[ "$out" = "copied 2 files" ] || fail "expected 'copied 2 files', got '$out'"
[ -f "$scratch/saved copies/plain.txt.bak" ] || fail "plain.txt was not copied"
cmp -s "$scratch/my files/with space.txt" "$scratch/saved copies/with space.txt.bak" \
  || fail "'with space.txt' was not copied whole"
[ ! -e "$scratch/saved copies/nested.bak" ] || fail "a directory was copied"

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi
echo "all passed"
"##;

fn fix_backup() -> Vec<Round> {
    vec![
        calls([
            read("bin/backup.sh"),
            read("tests/test_backup.sh"),
            bash("bash tests/test_backup.sh"),
        ]),
        calls([write(
            "bin/backup.sh",
            &BACKUP.replace(
                "mkdir -p $dest\ncount=0\nfor file in $(ls $src); do\n  \
                 if [ -f $src/$file ]; then\n    cp $src/$file $dest/$file.bak\n",
                "mkdir -p \"$dest\"\ncount=0\nfor path in \"$src\"/*; do\n  \
                 if [ -f \"$path\" ]; then\n    \
                 cp -- \"$path\" \"$dest/$(basename -- \"$path\").bak\"\n",
            ),
        )]),
        calls([bash("bash tests/test_backup.sh && git diff --stat")]),
        answer(
            "bin/backup.sh split names at spaces: it looped over `$(ls $src)` and used \
             every path unquoted. It now loops over the glob `\"$src\"/*` and quotes each \
             path, so `with space.txt` and the `my files` directory work. \
             tests/test_backup.sh passes.",
        ),
    ]
}

// ---- Answer a checked question from a log ----

const ANSWER_LOGS: Task = Task {
    name: "shell-answer-logs",
    language: Language::Shell,
    kind: "answer a checked question",
    files: &[
        (
            "README.md",
            "# web-01\n\nThe front web server's files. `logs/access.log` is Friday's \
             access log, in the common log format.\n",
        ),
        ("logs/access.log", include_str!("data/access.log")),
    ],
    prompt: "Which client IP address got the most 404 (Not Found) responses in \
             logs/access.log, and how many did it get?",
    check: r##"
grep -q '203\.0\.113\.7\b' "$EVAL_ANSWER" \
  || { echo "the answer does not name 203.0.113.7:"; cat "$EVAL_ANSWER"; exit 1; }
grep -Eq '(^|[^0-9.])12([^0-9]|$)' "$EVAL_ANSWER" \
  || { echo "the answer does not say 12:"; cat "$EVAL_ANSWER"; exit 1; }
"##,
    solution: answer_logs,
};

fn answer_logs() -> Vec<Round> {
    vec![
        calls([bash(
            "awk '$9 == 404 { print $1 }' logs/access.log | sort | uniq -c | sort -rn | head",
        )]),
        answer(
            "203.0.113.7 got the most 404 responses: 12 of its 15 requests, all for paths \
             such as /wp-login.php and /.env. The next is 198.51.100.23 with 6.",
        ),
    ]
}

// ---- Follow the instruction file: a new script ----

const NEW_SCRIPT: Task = Task {
    name: "shell-agents-md",
    language: Language::Shell,
    kind: "follow the instruction file",
    files: &[
        ("AGENTS.md", OPS_AGENTS),
        ("README.md", OPS_README),
        ("bin/disk-report.sh", OPS_DISK_REPORT),
    ],
    prompt: "Write a script `bin/prune-logs.sh DIR KEEP` that deletes all but the KEEP \
             newest `*.log` files in DIR (by modification time) and prints the name of \
             each file it deletes. Other files in DIR are never touched.",
    check: r##"
f=bin/prune-logs.sh
[ -f "$f" ] || { echo "there is no $f"; exit 1; }
[ -x "$f" ] || { echo "$f is not executable, which AGENTS.md asks for"; exit 1; }
[ "$(sed -n 1p "$f")" = '#!/usr/bin/env bash' ] \
  || { echo "$f does not start with #!/usr/bin/env bash (AGENTS.md)"; exit 1; }
sed -n 2p "$f" | grep -q '^# Usage:' \
  || { echo "the second line of $f is not a '# Usage:' comment (AGENTS.md)"; exit 1; }
grep -qx 'set -euo pipefail' "$f" || { echo "$f has no 'set -euo pipefail' line (AGENTS.md)"; exit 1; }
awk '/^## Scripts/ { on = 1; next } /^## / { on = 0 } on && /prune-logs\.sh/ { found = 1 }
     END { exit !found }' README.md \
  || { echo "README.md's Scripts section does not list prune-logs.sh (AGENTS.md)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
d="$scratch/app logs"
mkdir "$d"
for i in 1 2 3 4 5; do
  echo "$i" >"$d/app-$i.log"
  touch -d "2024-01-0$i 12:00" "$d/app-$i.log"
done
echo notes >"$d/notes.txt"
touch -d "2023-06-01 12:00" "$d/notes.txt"
out=$("./$f" "$d" 2) || { echo "$f failed: $out"; exit 1; }
left=$(cd "$d" && ls | tr '\n' ' ')
[ "$left" = "app-4.log app-5.log notes.txt " ] \
  || { echo "after '$f DIR 2' the directory holds: $left"; exit 1; }
for i in 1 2 3; do
  grep -q "app-$i.log" <<<"$out" || { echo "it did not print app-$i.log: $out"; exit 1; }
done
"##,
    solution: new_script,
};

const OPS_AGENTS: &str = r##"# House rules for scripts

- Every script starts with `#!/usr/bin/env bash`, then a `# Usage:` comment line, then
  `set -euo pipefail`.
- Scripts live in `bin/` and are executable.
- Every script is listed in README.md's "Scripts" section, with one line saying what it
  does.
"##;

const OPS_README: &str = r##"# ops-scripts

Small scripts for the web servers.

## Scripts

- `bin/disk-report.sh` — prints each mounted file system that is over 80% full.

## Deploying

Copy `bin/` to `/usr/local/lib/ops` on each server.
"##;

const OPS_DISK_REPORT: &str = r##"#!/usr/bin/env bash
# Usage: disk-report.sh [PERCENT] — the file systems fuller than PERCENT (default 80).
set -euo pipefail

limit=${1:-80}
df -P | awk -v limit="$limit" 'NR > 1 { use = $5; sub(/%/, "", use); if (use + 0 > limit) print $6, $5 }'
"##;

const PRUNE_LOGS: &str = r##"#!/usr/bin/env bash
# Usage: prune-logs.sh DIR KEEP — deletes all but the KEEP newest *.log files in DIR.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: prune-logs.sh DIR KEEP" >&2
  exit 2
fi
dir=$1
keep=$2
# Newest first, by modification time; names are read whole, so spaces are safe.
find "$dir" -maxdepth 1 -type f -name '*.log' -printf '%T@ %f\n' | sort -rn | cut -d' ' -f2- |
  tail -n +"$((keep + 1))" |
  while IFS= read -r name; do
    rm -- "$dir/$name"
    echo "$name"
  done
"##;

fn new_script() -> Vec<Round> {
    vec![
        calls([read("bin/disk-report.sh"), read("README.md")]),
        calls([
            write("bin/prune-logs.sh", PRUNE_LOGS),
            edit(
                "README.md",
                "over 80% full.\n",
                "over 80% full.\n- `bin/prune-logs.sh` — deletes all but the newest KEEP `*.log` \
                 files of a directory.\n",
            ),
        ]),
        calls([bash(
            "chmod +x bin/prune-logs.sh && d=$(mktemp -d) && for i in 1 2 3; do \
             touch -d \"2024-01-0$i\" \"$d/a$i.log\"; done && bin/prune-logs.sh \"$d\" 1 && ls \"$d\"",
        )]),
        answer(
            "Added bin/prune-logs.sh (executable, with the shebang, `# Usage:` line and \
             `set -euo pipefail` AGENTS.md asks for) and listed it in README.md's Scripts \
             section. Tried on three logs with KEEP=1: it deleted and printed the two \
             older ones and kept the newest.",
        ),
    ]
}
