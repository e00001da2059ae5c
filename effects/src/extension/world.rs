//! What an extensions' decision needs from the world before it is recorded, so that a replay
//! needs neither the extensions nor the world: a `resources_discover` decision's paths loaded
//! (the files read now, from the user's home), and a `user_bash` handler's `exec` output made
//! Pi's result (cleaned, its full output written to a temporary file). The registry composes
//! the handlers' answers without touching the world; the interpreters that run extensions for
//! real carry their outcome out here.

use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pi_core::agent::hooks::{ExecRun, HookDecision, HookOutcome, HookPayload, UserBashAnswer};

use crate::tools::user_bash::exec_output;

/// What of a hook point's payload the world's part of its outcome needs, taken before the
/// payload goes to the handlers.
#[derive(Debug)]
pub struct World {
    /// The folder resources are discovered for (a `resources_discover` hook point's `cwd`).
    discovering: Option<PathBuf>,
}

impl World {
    /// What `payload`'s outcome will need.
    pub fn of(payload: &HookPayload) -> World {
        let discovering = match payload {
            HookPayload::ResourcesDiscover { cwd, .. } => Some(PathBuf::from(cwd)),
            _ => None,
        };
        World { discovering }
    }

    /// `outcome` with its part in the world done: discovered resources loaded, an `exec`'s
    /// output cleaned.
    pub async fn carry_out(self, mut outcome: HookOutcome) -> HookOutcome {
        if let (HookDecision::ResourcesDiscover(found), Some(cwd)) =
            (&mut outcome.decision, self.discovering)
        {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            crate::resources::load_discovered(&cwd, &home, found);
        }
        if let HookDecision::UserBash {
            answer: Some(UserBashAnswer::Exec { run }),
        } = &outcome.decision
        {
            outcome.decision = HookDecision::UserBash {
                answer: Some(ran(run.clone()).await),
            };
        }
        outcome
    }
}

/// The decision for a command `exec` ran: its cleaned chunks and result, or the error `exec`
/// threw (Pi's `executeBash` lets it through: the command fails, nothing is reported).
async fn ran(run: ExecRun) -> UserBashAnswer {
    if let Some(error) = run.error {
        return UserBashAnswer::Failed { error };
    }
    let mut chunks = Vec::with_capacity(run.chunks.len());
    for chunk in &run.chunks {
        match STANDARD.decode(chunk) {
            Ok(bytes) => chunks.push(bytes),
            Err(error) => {
                return UserBashAnswer::Failed {
                    error: format!(
                        "the extension host sent an exec chunk that is not base64: {error}"
                    ),
                }
            }
        }
    }
    let exit_code = run.exit_code.and_then(|code| i32::try_from(code).ok());
    match exec_output(std::env::temp_dir(), &chunks, exit_code, run.cancelled).await {
        Ok((chunks, result)) => UserBashAnswer::Ran {
            chunks,
            result: result.to_json(),
        },
        Err(error) => UserBashAnswer::Failed { error },
    }
}
