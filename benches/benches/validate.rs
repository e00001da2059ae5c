//! Tool-argument validation of one call against a declaration with JavaScript `pattern`s (a
//! property's, an array item's, `patternProperties` keys): what every call of such a tool pays
//! before it runs, compiling the declaration's patterns included.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use pi_core::validate::validate_tool_arguments;
use serde_json::json;

fn bench_validate(c: &mut Criterion) {
    let schema = json!({
        "type": "object",
        "properties": {
            "ticket": {"type": "string", "pattern": "^[A-Z]{2,10}-[0-9]{1,6}$"},
            "email": {"type": "string",
                      "pattern": "^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)*\\.[A-Za-z]{2,}$"},
            "date": {"type": "string", "pattern": "^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$"},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,31}$"}},
            "labels": {"type": "object",
                       "patternProperties": {"^x-[a-z]+$": {"type": "string"},
                                             "^[a-z]+\\.[a-z]+$": {"type": "number"}},
                       "additionalProperties": false}
        },
        "required": ["ticket", "email"]
    });
    let args = json!({
        "ticket": "PI-4242",
        "email": "someone.else+pi@example.co.uk",
        "date": "2026-11-27",
        "tags": ["review", "trust", "cache-7"],
        "labels": {"x-team": "harness", "run.count": 3}
    });
    assert!(validate_tool_arguments("file_ticket", &schema, &args).is_ok());
    c.bench_function("validate/call with patterns", |b| {
        b.iter(|| validate_tool_arguments("file_ticket", &schema, &args).unwrap())
    });
}

criterion_group!(benches, bench_validate);
criterion_main!(benches);
