//! JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line, UTF-8 JSON, no
//! embedded newlines. Only what a tool server needs: requests and notifications in, results
//! and errors out.

use serde_json::{json, Value};

/// The protocol revisions this server speaks, newest first. A client asking for one of
/// them gets it; any other gets the newest (the client then decides whether to go on).
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC's error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters are wrong (also: an unknown tool).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A request: it gets exactly one response with its id.
    Request {
        /// The request id (a string or a number).
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// A notification: no response.
    Notification {
        /// The method.
        method: String,
    },
    /// A response sent by the client: ignored.
    Response,
    /// A line that is no valid message: answered with this error (id `null` when the id
    /// could not be read).
    Invalid {
        /// The id, when one was readable.
        id: Value,
        /// The error code.
        code: i64,
        /// What was wrong.
        message: String,
    },
}

/// Reads one line of the transport.
pub fn read(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return invalid(Value::Null, code::PARSE_ERROR, format!("parse error: {e}")),
    };
    let Some(obj) = value.as_object() else {
        return invalid(
            Value::Null,
            code::INVALID_REQUEST,
            "a message must be a JSON object (batches are not part of MCP)".into(),
        );
    };
    let id = obj.get("id").cloned();
    if let Some(id) = &id {
        if !(id.is_string() || id.is_number()) {
            return invalid(
                Value::Null,
                code::INVALID_REQUEST,
                "id must be a string or a number".into(),
            );
        }
    }
    let id_or_null = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(
            id_or_null,
            code::INVALID_REQUEST,
            "jsonrpc must be \"2.0\"".into(),
        );
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A response from the client (to a request this server never sends): JSON-RPC
        // answers no response.
        if obj.contains_key("result") || obj.contains_key("error") {
            return Incoming::Response;
        }
        return invalid(id_or_null, code::INVALID_REQUEST, "no method".into());
    };
    match id {
        Some(id) => Incoming::Request {
            id,
            method: method.to_owned(),
            params: obj.get("params").cloned().unwrap_or(Value::Null),
        },
        None => Incoming::Notification {
            method: method.to_owned(),
        },
    }
}

fn invalid(id: Value, code: i64, message: String) -> Incoming {
    Incoming::Invalid { id, code, message }
}

/// A result message.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error message.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The revision to answer `initialize` with, for the one the client asked for.
pub fn negotiate(asked: Option<&str>) -> &'static str {
    PROTOCOL_VERSIONS
        .iter()
        .find(|v| Some(**v) == asked)
        .copied()
        .unwrap_or(PROTOCOL_VERSIONS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_requests_notifications_or_errors() {
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            Incoming::Request {
                id: json!(7),
                method: "tools/list".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Incoming::Notification {
                method: "notifications/initialized".into()
            }
        );
        for (line, want) in [
            ("{not json", code::PARSE_ERROR),
            ("[1, 2]", code::INVALID_REQUEST),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
                code::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                code::INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":3}"#, code::INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":3,"params":{}}"#,
                code::INVALID_REQUEST,
            ),
        ] {
            match read(line) {
                Incoming::Invalid { code, .. } => assert_eq!(code, want, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_response_from_the_client_gets_no_answer() {
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":22,"result":{}}"#),
            Incoming::Response
        );
    }

    #[test]
    fn the_clients_revision_is_kept_when_known() {
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate(Some("1999-01-01")), PROTOCOL_VERSIONS[0]);
        assert_eq!(negotiate(None), PROTOCOL_VERSIONS[0]);
    }
}
