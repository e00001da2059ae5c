//! The RPC protocol's response line (`--mode rpc` stdout); commands arrive in later layers.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The constant `type` of a response line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseType {
    Response,
}

/// `{"id"?, "type": "response", "command", "success", "data"? | "error"?}`; the id is echoed as
/// sent (string or number) and absent when none could be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RpcResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    #[serde(rename = "type")]
    pub kind: ResponseType,
    pub command: String,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
