//! The one error a flow's text can earn: the line, a code, what is wrong, and what to
//! write instead. Refusals (a command that cannot work on Android or here) use it too,
//! so a caller shows every problem the same way.

/// Why a flow (or a workspace file) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", self.location())]
pub struct ParseError {
    /// 1-based line of the offending command or field; 0 for the workspace as a whole.
    pub line: usize,
    /// `invalid_yaml`, `invalid_command`, `unknown_command`, `unknown_field`,
    /// `not_on_android` (Maestro has it, Android cannot do it), `not_supported` (works on
    /// Android, not here), `invalid_workspace`.
    pub code: &'static str,
    pub message: String,
    pub hint: String,
    /// The file it is in, when read as part of a workspace.
    pub file: Option<String>,
}

impl ParseError {
    pub fn new(
        line: usize,
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self {
            line,
            code,
            message: message.into(),
            hint: hint.into(),
            file: None,
        }
    }

    /// The same error, said to be in `file`.
    pub fn in_file(mut self, file: &str) -> Self {
        self.file.get_or_insert_with(|| file.to_string());
        self
    }

    /// `flows/login.yaml line 7`, `line 7`, or, for the workspace as a whole (line 0),
    /// the file alone or `workspace`.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), 0) => f.clone(),
            (None, 0) => "workspace".into(),
            (Some(f), l) => format!("{f} line {l}"),
            (None, l) => format!("line {l}"),
        }
    }
}
