//! Opens a session file and builds its context, as `pi --session FILE` does before the first
//! prompt; prints the entry and message counts. Timed as a whole process by
//! `benches/session-side-by-side.sh`.

use std::path::Path;
use std::process::ExitCode;

use pi_core::session::ids::IdGenerator;
use pi_effects::session::SessionStore;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: open_session <session.jsonl>");
        return ExitCode::from(2);
    };
    let store = match SessionStore::open(Path::new(&path), None, None, "/", 0, IdGenerator::new(0))
    {
        Ok(store) => store,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(1);
        }
    };
    let context = store.tree().context();
    println!(
        "entries={} messages={}",
        store.tree().entries().len(),
        context.messages.len()
    );
    // A process that is about to exit leaves its memory to the OS instead of freeing 20,000
    // entries one allocation at a time (the `pi` binary does the same).
    std::mem::forget(context);
    std::mem::forget(store);
    ExitCode::SUCCESS
}
