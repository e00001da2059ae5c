//! Pi 1.5.2's `user_bash` hook point as data: what a handler answers an RPC `bash` command with
//! (`UserBashEventResult`, checked as Pi's `isUserBashEventResult` checks it) and the decision
//! the session records. A `{result}` is the command's result with nothing run; `{operations}`
//! runs the command through the extension's `exec`, whose raw output the interpreter cleans
//! (as Pi's `executeBashWithOperations` does) before the decision is recorded, so a replay
//! needs neither the extension nor its `exec`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::BashExecutionMessage;
use crate::nullable::Nullable;

/// Pi's error for a handler's answer that is neither `undefined` nor exactly one valid
/// `{ operations }` or `{ result }` (reported, then thrown: the RPC command fails with it).
pub const INVALID_USER_BASH_RESULT: &str = "Invalid user_bash handler result: return undefined \
for local execution or exactly one valid { operations } or { result } object";

/// What one `user_bash` handler answered: `result`, a result of its own (any JSON; checked when
/// composed), or `exec`, what its operations' `exec` gave when the command ran through it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserBashHandled {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecRun>,
}

/// A command run through an extension's `exec`: the raw chunks its `onData` got (base64, as
/// bytes may split characters and escape sequences), its exit code, whether the run's signal
/// fired, or what it threw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRun {
    #[serde(default)]
    pub chunks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub cancelled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `user_bash` decision (none in [`HookDecision::UserBash`](super::hooks::HookDecision)
/// when no handler answered: the command runs in the local shell).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UserBashAnswer {
    /// A handler's `{result}`: recorded and answered as given.
    Result { result: Value },
    /// The command ran through a handler's operations, its output not cleaned yet: the
    /// interpreter turns it into [`UserBashAnswer::Ran`] before the decision is recorded.
    Exec { run: ExecRun },
    /// The command ran through a handler's operations: its cleaned chunks (Pi's
    /// `bash_execution_update` deltas) and its result.
    Ran { chunks: Vec<String>, result: Value },
    /// The handler threw or answered something invalid (reported as its error), or its
    /// `exec` threw (not reported): the RPC command fails with this text.
    Failed { error: String },
}

impl UserBashAnswer {
    /// The decision a handler's answer makes, as Pi's `emitUserBash` reads it: anything but
    /// exactly one valid `result` or `exec` is [`INVALID_USER_BASH_RESULT`].
    pub fn of(handled: UserBashHandled) -> Self {
        match handled {
            UserBashHandled {
                result: Some(result),
                exec: None,
            } if valid_result(&result) => UserBashAnswer::Result { result },
            UserBashHandled {
                result: None,
                exec: Some(run),
            } => UserBashAnswer::Exec { run },
            _ => UserBashAnswer::Failed {
                error: INVALID_USER_BASH_RESULT.to_owned(),
            },
        }
    }

    /// The result to record and answer with, if the command has one.
    pub fn result(&self) -> Option<&Value> {
        match self {
            UserBashAnswer::Result { result } | UserBashAnswer::Ran { result, .. } => Some(result),
            UserBashAnswer::Exec { .. } | UserBashAnswer::Failed { .. } => None,
        }
    }
}

/// Pi's check of a `{result}`: `output` a string, `exitCode` a number or undefined (absent:
/// JSON has no `undefined`, so Pi's "present but undefined" arrives as absent), `cancelled` and
/// `truncated` booleans, `fullOutputPath` a string or undefined.
fn valid_result(result: &Value) -> bool {
    let Some(fields) = result.as_object() else {
        return false;
    };
    fields.get("output").is_some_and(Value::is_string)
        && fields.get("exitCode").is_none_or(Value::is_number)
        && fields.get("cancelled").is_some_and(Value::is_boolean)
        && fields.get("truncated").is_some_and(Value::is_boolean)
        && fields
            .get("fullOutputPath")
            .is_none_or(|path| path.is_string())
}

/// The `bashExecution` message Pi's `recordBashResult` writes for `result` at `now`.
pub fn bash_message(
    command: &str,
    result: &Value,
    exclude_from_context: Option<bool>,
    now: u64,
) -> BashExecutionMessage {
    BashExecutionMessage {
        command: command.to_owned(),
        output: result["output"].as_str().unwrap_or_default().to_owned(),
        exit_code: result["exitCode"]
            .as_f64()
            .map_or(Nullable::Absent, |code| Nullable::Value(code as i64)),
        cancelled: result["cancelled"].as_bool().unwrap_or(false),
        truncated: result["truncated"].as_bool().unwrap_or(false),
        full_output_path: result["fullOutputPath"].as_str().map(str::to_owned),
        timestamp: now,
        exclude_from_context,
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_decisions_round_trip_as_recorded() {
        use crate::agent::hooks::HookDecision;
        let answers = [
            None,
            Some(UserBashAnswer::Ran {
                chunks: vec!["a\n".into()],
                result: json!({"output": "a\n", "cancelled": false, "truncated": false}),
            }),
            Some(UserBashAnswer::Failed { error: "no".into() }),
        ];
        for answer in answers {
            let decision = HookDecision::UserBash { answer };
            let text = serde_json::to_string(&decision).unwrap();
            assert_eq!(
                serde_json::from_str::<HookDecision>(&text).unwrap(),
                decision,
                "{text}"
            );
        }
    }

    #[test]
    fn a_result_is_checked_as_pi_checks_it() {
        let good = json!({"output": "x", "exitCode": 0, "cancelled": false, "truncated": false});
        assert!(valid_result(&good));
        for bad in [
            json!({"output": 42}),
            json!({"output": "x", "exitCode": null, "cancelled": false, "truncated": false}),
            json!({"output": "x", "exitCode": "0", "cancelled": false, "truncated": false}),
            json!({"output": "x", "exitCode": 0, "cancelled": false, "truncated": false, "fullOutputPath": 1}),
            json!("text"),
        ] {
            assert!(!valid_result(&bad), "{bad}");
        }
        let both = UserBashHandled {
            result: Some(good),
            exec: Some(ExecRun::default()),
        };
        assert_eq!(
            UserBashAnswer::of(both),
            UserBashAnswer::Failed {
                error: INVALID_USER_BASH_RESULT.into()
            }
        );
    }
}
