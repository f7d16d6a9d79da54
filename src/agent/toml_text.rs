//! Codex's `config.toml` edited in place: one `[mcp_servers.<name>]` table added or taken
//! out by `toml_edit`, which keeps every comment, blank line and layout of the rest.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// `text` with the MCP server `name` running `command args…` (unchanged when it already is).
pub(crate) fn put_server(
    text: &str,
    name: &str,
    command: &str,
    args: &[String],
) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        // `[mcp_servers.skillidx]` alone, without an empty `[mcp_servers]` header.
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    if servers
        .as_table_like()
        .and_then(|t| t.get(name))
        .and_then(Item::as_table_like)
        .is_some_and(|s| runs(s, command, args))
    {
        return Ok(text.to_owned());
    }
    let argv: Array = args.iter().map(String::as_str).collect();
    match servers {
        Item::Table(t) => {
            let mut server = Table::new();
            server.insert("command", toml_edit::value(command));
            server.insert("args", toml_edit::value(argv));
            t.insert(name, Item::Table(server));
        }
        Item::Value(Value::InlineTable(t)) => {
            let mut server = InlineTable::new();
            server.insert("command", command.into());
            server.insert("args", Value::Array(argv));
            t.insert(name, Value::InlineTable(server));
        }
        _ => return Err("`mcp_servers` is not a table".into()),
    }
    Ok(doc.to_string())
}

/// `text` without the MCP server `name`, and without the `mcp_servers` table when `put_server`
/// made it and nothing else is left in it.
pub(crate) fn take_server(text: &str, name: &str) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let Some(servers) = doc.get_mut("mcp_servers") else {
        return Ok(text.to_owned());
    };
    let servers_table = servers
        .as_table_like_mut()
        .ok_or("`mcp_servers` is not a table")?;
    if servers_table.remove(name).is_none() {
        return Ok(text.to_owned());
    }
    if servers_table.is_empty() && servers.as_table().is_some_and(Table::is_implicit) {
        doc.remove("mcp_servers");
    }
    Ok(doc.to_string())
}

/// Whether the server table `server` runs `command args…`.
fn runs(server: &dyn TableLike, command: &str, args: &[String]) -> bool {
    let argv = server.get("args").and_then(Item::as_array);
    server.get("command").and_then(Item::as_str) == Some(command)
        && argv.is_some_and(|a| {
            a.iter()
                .map(Value::as_str)
                .eq(args.iter().map(|s| Some(s.as_str())))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"# Codex settings
model = "gpt-5-codex"   # the default model

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]  # keep

# profiles below
[profiles.fast]
model = "o4-mini"
"#;

    #[test]
    fn put_then_take_keeps_every_byte() {
        let args = vec!["mcp".to_string(), "--agent".into(), "codex".into()];
        let added = put_server(CONFIG, "skillidx", "/bin/skillidx", &args).unwrap();
        let doc: DocumentMut = added.parse().unwrap();
        assert_eq!(
            doc["mcp_servers"]["skillidx"]["command"].as_str(),
            Some("/bin/skillidx")
        );
        assert_eq!(
            doc["mcp_servers"]["docs"]["command"].as_str(),
            Some("docs-mcp")
        );
        assert!(added.starts_with(CONFIG.split("# profiles").next().unwrap()));
        assert_eq!(
            put_server(&added, "skillidx", "/bin/skillidx", &args).unwrap(),
            added
        );
        assert_eq!(take_server(&added, "skillidx").unwrap(), CONFIG);
    }

    #[test]
    fn a_file_without_servers_gets_them_back_out() {
        for text in ["", "model = \"x\"\n", "# only a comment\n"] {
            let added = put_server(text, "skillidx", "/b/skillidx", &[]).unwrap();
            assert!(added.contains("[mcp_servers.skillidx]"), "{added}");
            assert!(!added.contains("[mcp_servers]\n"), "{added}");
            assert_eq!(take_server(&added, "skillidx").unwrap(), text);
        }
    }

    #[test]
    fn inline_servers_and_bad_toml() {
        let text = "mcp_servers = { a = { command = \"a\" } }\n";
        let added = put_server(text, "skillidx", "/b/skillidx", &[]).unwrap();
        let doc: DocumentMut = added.parse().unwrap();
        assert_eq!(
            doc["mcp_servers"]["skillidx"]["command"].as_str(),
            Some("/b/skillidx")
        );
        assert_eq!(take_server(&added, "skillidx").unwrap(), text);
        assert!(put_server("mcp_servers = 3\n", "s", "c", &[]).is_err());
        assert!(put_server("[a\n", "s", "c", &[]).is_err());
    }
}
