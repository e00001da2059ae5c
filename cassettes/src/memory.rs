//! A print-mode cassette replayed in memory: no session file, no output, only whether this build
//! does what the recording did. For benches, property tests and programs that check cassettes
//! without the binary (`pi replay --check` also compares the output and the session file).

use std::path::Path;
use std::sync::Arc;

use pi_effects::driver::drive;
use pi_effects::run_config::build_machine;

use crate::divergence::Divergence;
use crate::format::SessionKind;
use crate::read::{starting_session, Cassette, InMemory};
use crate::replay::Replay;

/// Replays `cassette` from its recorded configuration, its recorded inputs in order; the first
/// place this build parts from it. A session the run resumed needs its file: replay those with
/// `pi replay`.
pub async fn replay_in_memory(cassette: Arc<Cassette>) -> Result<(), Divergence> {
    let header = &cassette.header;
    if header.session.kind == SessionKind::Open {
        return Err(Divergence::unusable_cassette(
            &cassette,
            "a resumed session replays with its file: use pi replay".into(),
        ));
    }
    let config = cassette.config.clone();
    let store = starting_session(
        &header.session,
        None,
        cassette.imported.as_ref(),
        &config,
        Path::new(""),
        InMemory::Always,
    )
    .map_err(|why| Divergence::unusable_cassette(&cassette, why))?;
    let (mut machine, mut file) = build_machine(&config, store)
        .map_err(|e| Divergence::unusable_cassette(&cassette, e.to_string()))?;
    let mut io = Replay::new(cassette)?;
    for input in io.outside_inputs() {
        if let Err(error) = drive(&mut machine, &mut io, &mut file, input, |_| {}).await {
            return Err(Divergence::of_run(&error, io.cassette()));
        }
    }
    io.finish()
}
