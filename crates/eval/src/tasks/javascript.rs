//! The JavaScript tasks: CommonJS for Node.js, no packages, tested with `node --test`.

use crate::task::{Language, Round, Task, answer, bash, calls, edit, grep, read, write};

/// The JavaScript tasks.
pub const TASKS: &[Task] = &[FIX_DURATION, RENAME_MONEY, BUILD_ID];

const GITIGNORE: &str = "node_modules/\n";

// ---- Fix a failing test: one digit where a number was meant ----

const FIX_DURATION: Task = Task {
    name: "js-fix-duration",
    language: Language::JavaScript,
    kind: "fix a failing test",
    files: &[
        (".gitignore", GITIGNORE),
        ("package.json", DURATION_PACKAGE),
        ("src/duration.js", DURATION),
        ("test/duration.test.js", DURATION_TESTS),
    ],
    prompt: "The tests fail (`node --test`). Find out why and fix the code, not the tests.",
    check: r##"
git diff --quiet HEAD -- test || { echo "the tests were changed"; exit 1; }
node --test 2>&1
"##,
    solution: fix_duration,
};

const DURATION_PACKAGE: &str = r##"{
  "name": "duration",
  "version": "2.0.1",
  "private": true,
  "main": "src/duration.js",
  "scripts": {
    "test": "node --test"
  }
}
"##;

const DURATION: &str = r##"'use strict';

const UNITS = { h: 3600000, m: 60000, s: 1000, ms: 1 };

/**
 * The milliseconds in a duration such as "1h30m", "90s" or "1s250ms": numbers each
 * followed by a unit (h, m, s, ms). Throws a RangeError for anything else.
 */
function parseDuration(text) {
  const pattern = /(\d)(ms|h|m|s)/g;
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index !== consumed) {
      break;
    }
    total += Number(match[1]) * UNITS[match[2]];
    consumed += match[0].length;
  }
  if (consumed === 0 || consumed !== text.length) {
    throw new RangeError(`not a duration: ${JSON.stringify(text)}`);
  }
  return total;
}

module.exports = { parseDuration };
"##;

const DURATION_TESTS: &str = r##"'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { parseDuration } = require('../src/duration');

test('one unit', () => {
  assert.strictEqual(parseDuration('5s'), 5000);
  assert.strictEqual(parseDuration('2h'), 7200000);
});

test('units add up', () => {
  assert.strictEqual(parseDuration('1h30m'), 5400000);
});

test('milliseconds', () => {
  assert.strictEqual(parseDuration('250ms'), 250);
  assert.strictEqual(parseDuration('1s500ms'), 1500);
});

test('anything else is refused', () => {
  for (const text of ['', 'h', '5x', '1h ', 'soon']) {
    assert.throws(() => parseDuration(text), RangeError, text);
  }
});
"##;

fn fix_duration() -> Vec<Round> {
    vec![
        calls([
            read("src/duration.js"),
            bash("node --test 2>&1 | tail -n 40"),
        ]),
        calls([edit(
            "src/duration.js",
            r"const pattern = /(\d)(ms|h|m|s)/g;",
            r"const pattern = /(\d+)(ms|h|m|s)/g;",
        )]),
        calls([bash("node --test 2>&1 | tail -n 15")]),
        answer(
            "The pattern in `parseDuration` took a single digit before each unit (`\\d`), \
             so `30m` or `250ms` did not match from the start and were refused. It now \
             takes a whole number (`\\d+`). `node --test` passes; the tests are unchanged.",
        ),
    ]
}

// ---- Rename a function across files ----

const RENAME_MONEY: Task = Task {
    name: "js-rename",
    language: Language::JavaScript,
    kind: "rename across files",
    files: &[
        (".gitignore", GITIGNORE),
        ("package.json", MONEY_PACKAGE),
        ("README.md", MONEY_README),
        ("src/money.js", MONEY),
        ("src/invoice.js", MONEY_INVOICE),
        ("src/cli.js", MONEY_CLI),
        ("test/money.test.js", MONEY_TESTS),
    ],
    prompt: "Rename `fmtMoney` to `formatMoney` throughout the project (code, tests and \
             README), and make sure the tests still pass.",
    check: r##"
if grep -rn fmtMoney --include='*.js' --include='*.md' --include='*.json' .; then
  echo "fmtMoney is still there"; exit 1
fi
grep -q 'function formatMoney(cents, currency)' src/money.js \
  || { echo "src/money.js defines no formatMoney(cents, currency)"; exit 1; }
out=$(node src/cli.js 1999 250)
[ "$out" = "Total: €22.49" ] || { echo "node src/cli.js 1999 250 printed: $out"; exit 1; }
node --test 2>&1
"##,
    solution: rename_money,
};

const MONEY_PACKAGE: &str = r##"{
  "name": "till",
  "version": "0.4.0",
  "private": true,
  "bin": { "till": "src/cli.js" },
  "scripts": {
    "test": "node --test"
  }
}
"##;

const MONEY_README: &str = r##"# till

Adds up a shop's invoice lines. `node src/cli.js 1999 250` prints `Total: €22.49`.

`fmtMoney(cents, currency)` in `src/money.js` writes an amount of cents with its
currency's symbol and two decimals.
"##;

const MONEY: &str = r##"'use strict';

const SYMBOLS = { EUR: '€', GBP: '£', USD: '$' };

/** `cents` written with the currency's symbol and two decimals, e.g. "€12.50". */
function fmtMoney(cents, currency) {
  const symbol = SYMBOLS[currency];
  if (symbol === undefined) {
    throw new RangeError(`unknown currency ${currency}`);
  }
  const sign = cents < 0 ? '-' : '';
  const whole = Math.floor(Math.abs(cents) / 100);
  const rest = String(Math.abs(cents) % 100).padStart(2, '0');
  return `${sign}${symbol}${whole}.${rest}`;
}

module.exports = { fmtMoney };
"##;

const MONEY_INVOICE: &str = r##"'use strict';

const { fmtMoney } = require('./money');

/** The invoice's total line for lines of cents, in `currency`. */
function totalLine(lines, currency) {
  const total = lines.reduce((sum, cents) => sum + cents, 0);
  return `Total: ${fmtMoney(total, currency)}`;
}

module.exports = { totalLine };
"##;

const MONEY_CLI: &str = r##"#!/usr/bin/env node
'use strict';

// Usage: node src/cli.js CENTS... — prints the total in euros.
const { totalLine } = require('./invoice');

const lines = process.argv.slice(2).map(Number);
if (lines.some(Number.isNaN)) {
  console.error('usage: till CENTS...');
  process.exit(2);
}
console.log(totalLine(lines, 'EUR'));
"##;

const MONEY_TESTS: &str = r##"'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { fmtMoney } = require('../src/money');
const { totalLine } = require('../src/invoice');

test('two decimals and a symbol', () => {
  assert.strictEqual(fmtMoney(1250, 'EUR'), '€12.50');
  assert.strictEqual(fmtMoney(5, 'GBP'), '£0.05');
  assert.strictEqual(fmtMoney(-199, 'USD'), '-$1.99');
});

test('unknown currencies are refused', () => {
  assert.throws(() => fmtMoney(1, 'XYZ'), RangeError);
});

test('the total line', () => {
  assert.strictEqual(totalLine([1999, 250], 'EUR'), 'Total: €22.49');
});
"##;

fn rename_money() -> Vec<Round> {
    vec![
        calls([grep("fmtMoney")]),
        calls([
            write("src/money.js", &MONEY.replace("fmtMoney", "formatMoney")),
            write(
                "src/invoice.js",
                &MONEY_INVOICE.replace("fmtMoney", "formatMoney"),
            ),
            write(
                "test/money.test.js",
                &MONEY_TESTS.replace("fmtMoney", "formatMoney"),
            ),
            edit(
                "README.md",
                "`fmtMoney(cents, currency)`",
                "`formatMoney(cents, currency)`",
            ),
        ]),
        calls([bash(
            "node --test 2>&1 | tail -n 12; grep -rn fmtMoney . --exclude-dir=.git || echo 'no fmtMoney left'",
        )]),
        answer(
            "Renamed `fmtMoney` to `formatMoney` in src/money.js (definition and export), \
             src/invoice.js, test/money.test.js and the README; src/cli.js only uses \
             `totalLine`, so it did not change. The tests pass and no `fmtMoney` is left.",
        ),
    ]
}

// ---- Use a command's output: the build ID ----

const BUILD_ID: Task = Task {
    name: "js-build-id",
    language: Language::JavaScript,
    kind: "use a command's output",
    files: &[
        (".gitignore", GITIGNORE),
        ("package.json", GREETER_PACKAGE),
        ("config/app.json", GREETER_CONFIG),
        ("src/greet.js", GREETER_GREET),
        ("src/server.js", GREETER_SERVER),
        ("tools/build-id.js", GREETER_BUILD_ID),
    ],
    prompt: "Set `buildId` in config/app.json to the build ID that `node tools/build-id.js` \
             prints for the current code. Change nothing else in that file.",
    check: r##"
expected=$(node tools/build-id.js)
EXPECTED="$expected" ORIGINAL="$(git show HEAD:config/app.json)" node -e '
const fs = require("node:fs");
const now = JSON.parse(fs.readFileSync("config/app.json", "utf8"));
const before = JSON.parse(process.env.ORIGINAL);
if (now.buildId !== process.env.EXPECTED) {
  console.error(`buildId is ${JSON.stringify(now.buildId)}, not ${process.env.EXPECTED}`);
  process.exit(1);
}
before.buildId = now.buildId;
if (JSON.stringify(now) !== JSON.stringify(before)) {
  console.error("config/app.json changed beyond buildId");
  process.exit(1);
}
'
"##,
    solution: build_id,
};

const GREETER_PACKAGE: &str = r##"{
  "name": "greeter",
  "version": "3.1.4",
  "private": true,
  "main": "src/server.js"
}
"##;

const GREETER_CONFIG: &str = r##"{
  "name": "greeter",
  "port": 8080,
  "buildId": "",
  "features": ["greetings", "farewells"]
}
"##;

const GREETER_GREET: &str = r##"'use strict';

/** A greeting for `name`, in the language of `locale` (English when unknown). */
function greet(name, locale) {
  const words = { en: 'Hello', fr: 'Bonjour', de: 'Hallo', es: 'Hola' };
  return `${words[locale] ?? words.en}, ${name}!`;
}

module.exports = { greet };
"##;

const GREETER_SERVER: &str = r##"'use strict';

const http = require('node:http');
const config = require('../config/app.json');
const { greet } = require('./greet');

http
  .createServer((request, response) => {
    const url = new URL(request.url, 'http://localhost');
    response.setHeader('x-build-id', config.buildId);
    response.end(greet(url.searchParams.get('name') ?? 'world', url.searchParams.get('lang')));
  })
  .listen(config.port);
"##;

const GREETER_BUILD_ID: &str = r##"#!/usr/bin/env node
'use strict';

// Prints the build ID: "build-" and the first 12 hex digits of the SHA-256 of
// package.json's version and of every file in src/, in name order.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const hash = crypto.createHash('sha256');
const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
hash.update(version);
for (const name of fs.readdirSync(path.join(root, 'src')).sort()) {
  hash.update(name);
  hash.update(fs.readFileSync(path.join(root, 'src', name)));
}
console.log(`build-${hash.digest('hex').slice(0, 12)}`);
"##;

fn build_id() -> Vec<Round> {
    vec![
        calls([bash("node tools/build-id.js"), read("config/app.json")]),
        // The scripted model cannot see the ID, so it puts the command's output in
        // place with the command itself.
        calls([bash(
            r##"id=$(node tools/build-id.js) && sed -i "s/\"buildId\": \"\"/\"buildId\": \"$id\"/" config/app.json && git diff"##,
        )]),
        answer(
            "Set `buildId` in config/app.json to the ID `node tools/build-id.js` prints; \
             nothing else in the file changed (the diff is that one line).",
        ),
    ]
}
