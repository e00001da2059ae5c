//! A `user_bash` handler's operations ran the command through the extension's `exec`: its raw
//! output is made Pi's result here, before the decision is recorded, so a replay needs neither
//! the extension nor the full-output file's writing.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pi_core::agent::hooks::{ExecRun, UserBashAnswer};

use crate::tools::user_bash::exec_output;

/// The decision for a command `exec` ran: its cleaned chunks and result, or the error `exec`
/// threw (Pi's `executeBash` lets it through: the command fails, nothing is reported).
pub(super) async fn ran(run: ExecRun) -> UserBashAnswer {
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
