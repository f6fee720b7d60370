//! The generic format: `<thinking>…</thinking><tool_call>{"action": "tap",
//! "coordinate": [0.5, 0.3]}</tool_call>` with [0, 1] coordinates: droidpilot's own
//! action JSON, parsed by `ActionParser` unchanged.

use super::Parsed;
use super::extract::{json_in, section, thinking};
use crate::agent::parse_error::ParseError;
use crate::domain::ActionParser;

pub const EXPECTED: &str = "<thinking>...</thinking><tool_call>{\"action\": \"tap\", \"coordinate\": [0.5, 0.3]}</tool_call>";

pub fn parse(text: &str, parser: &ActionParser) -> Result<Parsed, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty { expected: EXPECTED });
    }
    let sec = section(text, "<tool_call>", "</tool_call>").ok_or(ParseError::MissingTag {
        tag: "<tool_call>",
        expected: EXPECTED,
    })?;
    let v = json_in(&sec)?;
    Ok(Parsed {
        thinking: thinking(text, "<thinking>", "</thinking>"),
        action: parser.parse(&v)?,
    })
}

pub fn system_prompt(mcp_tools: &[crate::agent::McpTool]) -> String {
    let mut p = include_str!("../../../prompts/generic.v1.md").to_string();
    if !mcp_tools.is_empty() {
        p.push_str("\n## MCP tools\nCall one with {\"action\": \"mcp_call\", \"tool\": NAME, \"args\": {…}}:\n");
        for t in mcp_tools {
            p.push_str(&format!(
                "- {}: {} (args schema: {})\n",
                t.name, t.description, t.input_schema
            ));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::TargetField;
    use crate::domain::{Action, Key, NormPoint, Target};

    fn p(s: &str) -> Result<Parsed, ParseError> {
        parse(s, &ActionParser::new())
    }

    #[test]
    fn real_format_examples() {
        let table = [
            (
                "<thinking>Tap Wi-Fi.</thinking><tool_call>{\"action\": \"tap\", \"coordinate\": [0.5, 0.3]}</tool_call>",
                Action::Tap {
                    target: TargetField(Target::Coordinate(NormPoint::new(0.5, 0.3).unwrap())),
                },
            ),
            (
                "<thinking>Back.</thinking>\n<tool_call>\n```json\n{\"action\": \"back\"}\n```\n</tool_call>",
                Action::Key { key: Key::Back },
            ),
            (
                "<tool_call>{\"action\": \"finish\", \"success\": true, \"answer\": \"done\"}</tool_call>",
                Action::Finish {
                    success: true,
                    reason: None,
                    answer: Some("done".into()),
                },
            ),
        ];
        for (t, want) in table {
            assert_eq!(p(t).unwrap().action, want, "{t}");
        }
    }

    #[test]
    fn malformed_outputs() {
        assert_eq!(p("  ").unwrap_err().code(), "empty_reply");
        assert_eq!(p("tap at 0.5 0.3").unwrap_err().code(), "missing_tag");
        let e = p("<tool_call>{\"action\": \"tap\", \"coordinate\": [1.5, 0.3]}</tool_call>")
            .unwrap_err();
        assert!(
            e.to_string().contains("Coordinates must be in [0, 1]"),
            "{e}"
        );
        let e = p("<tool_call>{\"action\": \"tapp\", \"coordinate\": [0.5, 0.3]}</tool_call>")
            .unwrap_err();
        assert!(e.to_string().contains("did you mean `tap`"), "{e}");
        let t = "<tool_call>{\"action\": \"tap\" \"coordinate\": [0.5, 0.3]}</tool_call>";
        let ParseError::Json { offset, .. } = p(t).unwrap_err() else {
            panic!()
        };
        assert_eq!(&t[offset..offset + 1], "\"");
    }
}
