//! The Python tasks: the standard library only, tested with `python3 -m unittest`.

use crate::task::{Language, Round, Task, answer, bash, calls, edit, read};

/// The Python tasks.
pub const TASKS: &[Task] = &[FIX_SLUG, ADD_SECTIONS, ANSWER_REPORT, TYPED_AND_LOGGED];

const GITIGNORE: &str = "__pycache__/\n*.pyc\n";

// ---- Fix a failing test: runs of punctuation in a slug ----

const FIX_SLUG: Task = Task {
    name: "python-fix-slug",
    language: Language::Python,
    kind: "fix a failing test",
    files: &[
        (".gitignore", GITIGNORE),
        (
            "README.md",
            "# textkit\n\nText helpers for the blog engine: slugs for URLs.\n",
        ),
        (
            "textkit/__init__.py",
            "\"\"\"Text helpers for the blog engine.\"\"\"\n",
        ),
        ("textkit/slug.py", SLUG),
        ("tests/__init__.py", ""),
        ("tests/test_slug.py", SLUG_TESTS),
    ],
    prompt: "Some tests fail (`python3 -m unittest`). Fix the code so that they pass; \
             don't change the tests.",
    check: r##"
git diff --quiet HEAD -- tests || { echo "the tests were changed"; exit 1; }
python3 -m unittest 2>&1
"##,
    solution: fix_slug,
};

const SLUG: &str = r##""""URL slugs from titles."""

import re
import unicodedata


def slugify(title, max_length=60):
    """Return a lowercase ASCII slug of `title`.

    Letters and digits are kept; each run of anything else becomes one hyphen, and
    there is no hyphen at either end. A slug longer than `max_length` is cut at its
    last hyphen within the limit, if there is one.
    """
    ascii_title = (
        unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    )
    slug = re.sub(r"[^a-z0-9]", "-", ascii_title.lower()).strip("-")
    if len(slug) <= max_length:
        return slug
    cut = slug[:max_length]
    if "-" in cut:
        cut = cut[: cut.rindex("-")]
    return cut
"##;

const SLUG_TESTS: &str = r##"import unittest

from textkit.slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_lowercases_words(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_runs_of_punctuation_become_one_hyphen(self):
        self.assertEqual(slugify("Rust, Python & JavaScript!"), "rust-python-javascript")

    def test_drops_accents(self):
        self.assertEqual(slugify("Crème brûlée"), "creme-brulee")

    def test_cuts_at_a_hyphen(self):
        self.assertEqual(slugify("Why -- and how", max_length=10), "why-and")

    def test_nothing_left(self):
        self.assertEqual(slugify(" -- "), "")


if __name__ == "__main__":
    unittest.main()
"##;

fn fix_slug() -> Vec<Round> {
    vec![
        calls([
            read("textkit/slug.py"),
            bash("python3 -m unittest 2>&1 | tail -n 30"),
        ]),
        calls([edit(
            "textkit/slug.py",
            r##"re.sub(r"[^a-z0-9]", "-","##,
            r##"re.sub(r"[^a-z0-9]+", "-","##,
        )]),
        calls([bash("python3 -m unittest 2>&1")]),
        answer(
            "`slugify` replaced each character outside `[a-z0-9]` with its own hyphen, so \
             \"Rust, Python\" became `rust--python`. The pattern now matches a run of them \
             (`[^a-z0-9]+`), as the docstring says. All 5 tests pass; the tests are \
             unchanged.",
        ),
    ]
}

// ---- Add a feature with its test: sections in a settings file ----

const ADD_SECTIONS: Task = Task {
    name: "python-add-sections",
    language: Language::Python,
    kind: "add a feature with its test",
    files: &[
        (".gitignore", GITIGNORE),
        ("confparse.py", CONFPARSE),
        ("tests/__init__.py", ""),
        ("tests/test_confparse.py", CONFPARSE_TESTS),
    ],
    prompt: "Add sections to `confparse.parse`: a line `[name]` starts a section, and the \
             keys after it are stored as `name.key` (keys before any section keep their \
             plain name). A header with an empty name, like `[]`, is a ParseError. Add \
             tests for it.",
    check: r##"
tests=$(cat tests/*.py | grep -c 'def test' || true)
[ "$tests" -gt 4 ] || { echo "no test was added: $tests tests, as before"; exit 1; }
python3 -m unittest 2>&1
python3 - <<'EOF'
from confparse import ParseError, parse

text = "name = demo\n[server]\nport = 8080\nhost=example.org\n\n[log]\n# quiet\nlevel = debug\n"
got = parse(text)
want = {"name": "demo", "server.port": "8080", "server.host": "example.org", "log.level": "debug"}
assert got == want, f"parse gave {got!r}, not {want!r}"
try:
    parse("[]\nx = 1\n")
except ParseError:
    pass
else:
    raise SystemExit("an empty section name was accepted")
EOF
"##,
    solution: add_sections,
};

const CONFPARSE: &str = r##""""Reading `key = value` settings files."""


class ParseError(ValueError):
    """A line that is not a setting, with its number."""

    def __init__(self, line_number, line):
        super().__init__(f"line {line_number}: not a setting: {line!r}")
        self.line_number = line_number


def parse(text):
    """Return the settings in `text` as a dict of strings.

    Each line that is not blank is `key = value`, spaces around both ignored; a line
    starting with `#` is a comment. A key given twice keeps its last value.
    """
    settings = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError(number, raw)
        settings[key.strip()] = value.strip()
    return settings
"##;

const CONFPARSE_TESTS: &str = r##"import unittest

from confparse import ParseError, parse


class ParseTest(unittest.TestCase):
    def test_keys_and_values(self):
        self.assertEqual(parse("a = 1\nb=two words\n"), {"a": "1", "b": "two words"})

    def test_comments_and_blank_lines(self):
        self.assertEqual(parse("# note\n\n  a = 1\n"), {"a": "1"})

    def test_last_value_wins(self):
        self.assertEqual(parse("a = 1\na = 2\n"), {"a": "2"})

    def test_not_a_setting(self):
        with self.assertRaises(ParseError) as raised:
            parse("a = 1\nnonsense\n")
        self.assertEqual(raised.exception.line_number, 2)


if __name__ == "__main__":
    unittest.main()
"##;

fn add_sections() -> Vec<Round> {
    vec![
        calls([read("confparse.py"), read("tests/test_confparse.py")]),
        calls([
            edit(
                "confparse.py",
                "    starting with `#` is a comment. A key given twice keeps its last value.\n    \"\"\"\n    settings = {}\n",
                "    starting with `#` is a comment. A key given twice keeps its last value.\n\n    \
                 A line `[name]` starts a section: the keys after it are stored as\n    \
                 `name.key`. Keys before any section keep their plain name.\n    \"\"\"\n    \
                 settings = {}\n    section = \"\"\n",
            ),
            edit(
                "confparse.py",
                "            continue\n        key, sep, value",
                "            continue\n        \
                 if line.startswith(\"[\") and line.endswith(\"]\"):\n            \
                 section = line[1:-1].strip()\n            \
                 if not section:\n                \
                 raise ParseError(number, raw)\n            \
                 continue\n        key, sep, value",
            ),
            edit(
                "confparse.py",
                "        settings[key.strip()] = value.strip()",
                "        name = key.strip()\n        \
                 settings[f\"{section}.{name}\" if section else name] = value.strip()",
            ),
            edit(
                "tests/test_confparse.py",
                "        self.assertEqual(raised.exception.line_number, 2)\n",
                "        self.assertEqual(raised.exception.line_number, 2)\n\n    \
                 def test_sections_prefix_their_keys(self):\n        \
                 text = \"top = 1\\n[db]\\nhost = local\\n[web]\\nport = 80\\n\"\n        \
                 self.assertEqual(\n            \
                 parse(text), {\"top\": \"1\", \"db.host\": \"local\", \"web.port\": \"80\"}\n        \
                 )\n\n    \
                 def test_a_section_needs_a_name(self):\n        \
                 with self.assertRaises(ParseError):\n            \
                 parse(\"[ ]\\na = 1\\n\")\n",
            ),
        ]),
        calls([bash("python3 -m unittest -v 2>&1")]),
        answer(
            "`parse` now reads `[name]` headers: later keys are stored as `name.key`, keys \
             before the first header keep their names, and an empty header raises \
             ParseError with its line number. Two tests cover it; all 6 pass.",
        ),
    ]
}

// ---- Answer a checked question: a figure only running the report gives ----

const ANSWER_REPORT: Task = Task {
    name: "python-answer-report",
    language: Language::Python,
    kind: "answer a checked question",
    files: &[
        (".gitignore", GITIGNORE),
        ("data/orders.csv", include_str!("data/orders.csv")),
        ("rates.py", RATES),
        ("report.py", REPORT),
    ],
    prompt: "What is the APAC region's net revenue for the quarter, in euros, as report.py \
             computes it from data/orders.csv?",
    check: r##"
grep -Eq '2[ ,]?476\.97' "$EVAL_ANSWER" \
  || { echo "the answer does not give 2476.97:"; cat "$EVAL_ANSWER"; exit 1; }
"##,
    solution: answer_report,
};

const RATES: &str = r##""""Exchange rates to euros, as fixed for the quarter's report."""

from decimal import Decimal

RATES_TO_EUR = {
    "EUR": Decimal("1"),
    "GBP": Decimal("1.1693"),
    "USD": Decimal("0.9214"),
    "AUD": Decimal("0.6078"),
    "JPY": Decimal("0.00617"),
}
"##;

const REPORT: &str = r##""""Net revenue per region for the quarter, in euros.

Usage: python3 report.py [ORDERS_CSV]

Paid orders count; refunded ones are taken off, since the money went back; cancelled
ones never moved money. Each amount is converted to euros at the quarter's rate, and a
region's net is rounded to the cent once, at the end.
"""

import csv
import sys
from decimal import ROUND_HALF_EVEN, Decimal

from rates import RATES_TO_EUR

SIGN = {"paid": 1, "refunded": -1, "cancelled": 0}


def net_by_region(rows):
    """Return {region: net revenue in euros, rounded to the cent}."""
    totals = {}
    for row in rows:
        euros = Decimal(row["amount"]) * RATES_TO_EUR[row["currency"]]
        net = totals.get(row["region"], Decimal(0))
        totals[row["region"]] = net + SIGN[row["status"]] * euros
    cent = Decimal("0.01")
    return {
        region: total.quantize(cent, rounding=ROUND_HALF_EVEN)
        for region, total in totals.items()
    }


def main(argv):
    path = argv[1] if len(argv) > 1 else "data/orders.csv"
    with open(path, newline="") as orders:
        totals = net_by_region(csv.DictReader(orders))
    for region in sorted(totals):
        print(f"{region:<6}{totals[region]:>12}")


if __name__ == "__main__":
    main(sys.argv)
"##;

fn answer_report() -> Vec<Round> {
    vec![
        calls([read("report.py"), bash("python3 report.py")]),
        answer(
            "report.py gives APAC a net revenue of 2476.97 EUR for the quarter (paid orders \
             less refunds, converted at the quarter's rates; cancelled orders left out).",
        ),
    ]
}

// ---- Follow the instruction file: type hints, a test, the changelog ----

const TYPED_AND_LOGGED: Task = Task {
    name: "python-agents-md",
    language: Language::Python,
    kind: "follow the instruction file",
    files: &[
        (".gitignore", GITIGNORE),
        ("AGENTS.md", STATS_AGENTS),
        ("CHANGELOG.md", STATS_CHANGELOG),
        ("stats.py", STATS),
        ("tests/__init__.py", ""),
        ("tests/test_stats.py", STATS_TESTS),
    ],
    prompt: "Add a `median` function to stats.py: the middle value of a non-empty list of \
             numbers (the mean of the two middle ones when there is an even count); an \
             empty list raises ValueError.",
    check: r##"
python3 - <<'EOF'
import ast
import sys

tree = ast.parse(open("stats.py").read())
found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "median"]
if not found:
    sys.exit("stats.py has no median function")
args = found[0].args
params = args.posonlyargs + args.args + args.kwonlyargs
if found[0].returns is None or any(p.annotation is None for p in params):
    sys.exit("median lacks type hints, which AGENTS.md asks for")

from stats import median

assert median([3, 1, 2]) == 2, median([3, 1, 2])
assert median([4, 1, 3, 2]) == 2.5, median([4, 1, 3, 2])
assert median([7.5]) == 7.5
try:
    median([])
except ValueError:
    pass
else:
    sys.exit("median([]) raised no ValueError")
EOF
grep -q median tests/*.py || { echo "no test in tests/ names median, which AGENTS.md asks for"; exit 1; }
awk '/^## Unreleased/ { on = 1; next } /^## / { on = 0 } on && /median/ { found = 1 }
     END { exit !found }' CHANGELOG.md \
  || { echo "CHANGELOG.md names no median under ## Unreleased, which AGENTS.md asks for"; exit 1; }
python3 -m unittest 2>&1
"##,
    solution: typed_and_logged,
};

const STATS_AGENTS: &str = r##"# Conventions

- Every function has type hints on all its parameters and on its return value.
- Every new function gets unit tests in `tests/`.
- Note each change in CHANGELOG.md, under `## Unreleased`.
"##;

const STATS_CHANGELOG: &str = r##"# Changelog

## Unreleased

## 1.1.0

- `mean` raises ValueError for an empty list instead of ZeroDivisionError.

## 1.0.0

- `mean` and `spread`.
"##;

const STATS: &str = r##""""Summary statistics for the monitoring dashboards."""


def mean(values: list[float]) -> float:
    """Return the arithmetic mean of `values`; ValueError when there are none."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def spread(values: list[float]) -> float:
    """Return the largest value minus the smallest; ValueError when there are none."""
    if not values:
        raise ValueError("spread of no values")
    return max(values) - min(values)
"##;

const STATS_TESTS: &str = r##"import unittest

from stats import mean, spread


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_of_nothing(self):
        with self.assertRaises(ValueError):
            mean([])


class SpreadTest(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(spread([4, -1, 7]), 8)


if __name__ == "__main__":
    unittest.main()
"##;

fn typed_and_logged() -> Vec<Round> {
    vec![
        calls([
            read("stats.py"),
            read("tests/test_stats.py"),
            read("CHANGELOG.md"),
        ]),
        calls([
            edit(
                "stats.py",
                "    return max(values) - min(values)\n",
                "    return max(values) - min(values)\n\n\n\
                 def median(values: list[float]) -> float:\n    \
                 \"\"\"Return the middle value of `values` (the mean of the two middle ones for an\n    \
                 even count); ValueError when there are none.\"\"\"\n    \
                 if not values:\n        \
                 raise ValueError(\"median of no values\")\n    \
                 ordered = sorted(values)\n    \
                 middle = len(ordered) // 2\n    \
                 if len(ordered) % 2:\n        \
                 return ordered[middle]\n    \
                 return (ordered[middle - 1] + ordered[middle]) / 2\n",
            ),
            edit(
                "tests/test_stats.py",
                "from stats import mean, spread\n",
                "from stats import mean, median, spread\n",
            ),
            edit(
                "tests/test_stats.py",
                "        self.assertEqual(spread([4, -1, 7]), 8)\n",
                "        self.assertEqual(spread([4, -1, 7]), 8)\n\n\n\
                 class MedianTest(unittest.TestCase):\n    \
                 def test_odd_count(self):\n        \
                 self.assertEqual(median([5, 1, 3]), 3)\n\n    \
                 def test_even_count(self):\n        \
                 self.assertEqual(median([4, 1, 3, 2]), 2.5)\n\n    \
                 def test_median_of_nothing(self):\n        \
                 with self.assertRaises(ValueError):\n            \
                 median([])\n",
            ),
            edit(
                "CHANGELOG.md",
                "## Unreleased\n",
                "## Unreleased\n\n- `median`: the middle value, or the mean of the two middle ones.\n",
            ),
        ]),
        calls([bash("python3 -m unittest 2>&1")]),
        answer(
            "Added `median(values: list[float]) -> float` to stats.py with type hints, \
             three tests in tests/test_stats.py and a line under `## Unreleased` in \
             CHANGELOG.md, as AGENTS.md asks. All 6 tests pass.",
        ),
    ]
}
