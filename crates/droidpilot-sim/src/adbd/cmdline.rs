//! A POSIX-style command line: parsing and evaluation that never executes a program.
//!
//! Owns the grammar adb clients actually send to `shell:`/`exec:` (words with `'…'`,
//! `"…"` and `\` escapes; `;`, `&&`, `||`, `|`; `$?`, `$VAR`, `$(…)` and backticks;
//! `>`, `>>`, `2>`, `2>&1` redirections; `#` comments) and its evaluation over a
//! [`Builtins`] table. Every simple command, including ones inside `$(…)`, is dispatched
//! by name to a built-in handler; nothing reaches an OS shell. That is deliberate: an agent
//! that forgets to quote `hello; reboot` must see `reboot` dispatched (and failing with
//! `not found`), exactly as a phone's `sh` would run it, so injection bugs are visible in
//! tests instead of hidden. Hand-written because no crate parses *and* interprets this
//! subset without spawning processes; unquoted expansions are not field-split (noted in
//! tests), which no command we serve depends on.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;

/// The quoting this parser undoes lives in the domain layer, shared with the ADB backend.
pub use droidpilot_core::domain::shell::quote;

#[derive(Debug, Clone, PartialEq)]
pub struct Script(pub Vec<AndOr>);

#[derive(Debug, Clone, PartialEq)]
pub struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline(pub Vec<SimpleCommand>);

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimpleCommand {
    pub assignments: Vec<(String, Word)>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Redir {
    /// `>file`, `2>file`, `>>file`.
    ToFile { fd: u8, append: bool, target: Word },
    /// `2>&1`.
    ErrToOut,
    /// `>&2` / `1>&2`.
    OutToErr,
    /// `<file`.
    FromFile(Word),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Word(pub Vec<Part>);

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Lit(String),
    /// `$?`
    Status,
    /// `$NAME` / `${NAME}`
    Var(String),
    /// `$(…)` or `` `…` ``
    Subst(Script),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("/system/bin/sh: syntax error: {0}")]
pub struct SyntaxError(pub String);

/// Parses a whole command line.
pub fn parse(src: &str) -> Result<Script, SyntaxError> {
    let chars: Vec<char> = src.chars().collect();
    let mut p = Parser {
        s: &chars,
        i: 0,
        depth: 0,
    };
    let script = p.script(false)?;
    if p.i < chars.len() {
        return Err(SyntaxError(format!("'{}' unexpected", chars[p.i])));
    }
    Ok(script)
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    depth: usize,
}

/// Nesting deeper than this is an attack on the stack, not a command line.
const MAX_DEPTH: usize = 32;

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn peek2(&self) -> Option<char> {
        self.s.get(self.i + 1).copied()
    }
    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if c == ' ' || c == '\t' || c == '\r' {
                self.i += 1;
            } else if c == '\\' && self.peek2() == Some('\n') {
                self.i += 2;
            } else if c == '#' {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.i += 1;
                }
            } else {
                break;
            }
        }
    }

    /// `list := and_or ((';' | '&' | '\n') and_or)*`, ending at EOF or, inside `$(…)`, at `)`.
    fn script(&mut self, in_subst: bool) -> Result<Script, SyntaxError> {
        let mut items = Vec::new();
        loop {
            self.skip_blanks();
            match self.peek() {
                None => break,
                Some(')') if in_subst => break,
                Some(';' | '\n') => {
                    self.i += 1;
                    continue;
                }
                Some('&') if self.peek2() != Some('&') => {
                    self.i += 1;
                    continue;
                }
                _ => {}
            }
            items.push(self.and_or()?);
            self.skip_blanks();
            match self.peek() {
                None => break,
                Some(';' | '\n') => self.i += 1,
                Some('&') if self.peek2() != Some('&') => self.i += 1,
                Some(')') if in_subst => break,
                Some(c) => return Err(SyntaxError(format!("'{c}' unexpected"))),
            }
        }
        Ok(Script(items))
    }

    fn and_or(&mut self) -> Result<AndOr, SyntaxError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.skip_blanks();
            let conn = match (self.peek(), self.peek2()) {
                (Some('&'), Some('&')) => Connector::And,
                (Some('|'), Some('|')) => Connector::Or,
                _ => break,
            };
            self.i += 2;
            self.skip_newlines();
            rest.push((conn, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn skip_newlines(&mut self) {
        loop {
            self.skip_blanks();
            if self.peek() == Some('\n') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline, SyntaxError> {
        let mut cmds = vec![self.command()?];
        loop {
            self.skip_blanks();
            if self.peek() == Some('|') && self.peek2() != Some('|') {
                self.i += 1;
                self.skip_newlines();
                cmds.push(self.command()?);
            } else {
                break;
            }
        }
        Ok(Pipeline(cmds))
    }

    fn command(&mut self) -> Result<SimpleCommand, SyntaxError> {
        let mut cmd = SimpleCommand::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if matches!(c, ';' | '&' | '|' | '\n' | ')') {
                break;
            }
            if c == '(' {
                return Err(SyntaxError(
                    "'(' unexpected (subshells are not supported)".into(),
                ));
            }
            if let Some(r) = self.redirection()? {
                cmd.redirs.push(r);
                continue;
            }
            let start = self.i;
            let w = self.word()?;
            if cmd.words.is_empty()
                && let Some(Part::Lit(first)) = w.0.first()
                && let Some(eq) = first.find('=')
                && eq > 0
                && first[..eq].chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !first.starts_with(|c: char| c.is_ascii_digit())
                // Only an unquoted `NAME=` in the source is an assignment.
                && self.s.get(start..start + eq + 1).is_some_and(|raw| {
                    raw.iter().take(eq).copied().eq(first[..eq].chars()) && raw[eq] == '='
                })
            {
                let name = first[..eq].to_owned();
                let mut value = w.clone();
                if let Some(Part::Lit(l)) = value.0.first_mut() {
                    *l = l[eq + 1..].to_owned();
                }
                cmd.assignments.push((name, value));
                continue;
            }
            cmd.words.push(w);
        }
        if cmd.words.is_empty() && cmd.assignments.is_empty() && cmd.redirs.is_empty() {
            let what = self
                .peek()
                .map_or("end of line".to_string(), |c| format!("'{c}'"));
            return Err(SyntaxError(format!("{what} unexpected")));
        }
        Ok(cmd)
    }

    /// `[n]>word`, `[n]>>word`, `2>&1`, `>&2`, `<word`.
    fn redirection(&mut self) -> Result<Option<Redir>, SyntaxError> {
        let (fd, skip) = match (self.peek(), self.peek2()) {
            (Some(d @ ('1' | '2')), Some('>')) => (d as u8 - b'0', 1),
            (Some('>'), _) => (1, 0),
            (Some('<'), _) => {
                self.i += 1;
                self.skip_blanks();
                return Ok(Some(Redir::FromFile(self.word()?)));
            }
            _ => return Ok(None),
        };
        self.i += skip + 1;
        if self.peek() == Some('&') {
            self.i += 1;
            let target = self.peek();
            self.i += 1;
            return match (fd, target) {
                (2, Some('1')) => Ok(Some(Redir::ErrToOut)),
                (1, Some('2')) => Ok(Some(Redir::OutToErr)),
                (_, Some(t)) if t == (b'0' + fd) as char => Ok(Some(Redir::ToFile {
                    fd: 0,
                    append: true,
                    target: Word::default(),
                })),
                _ => Err(SyntaxError("bad file descriptor in redirection".into())),
            };
        }
        let append = self.peek() == Some('>');
        if append {
            self.i += 1;
        }
        self.skip_blanks();
        let target = self.word()?;
        if target.0.is_empty() {
            return Err(SyntaxError("redirection without a file".into()));
        }
        Ok(Some(Redir::ToFile { fd, append, target }))
    }

    fn word(&mut self) -> Result<Word, SyntaxError> {
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let mut any = false;
        fn flush(lit: &mut String, parts: &mut Vec<Part>) {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit)));
            }
        }
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
                '\'' => {
                    self.i += 1;
                    any = true;
                    loop {
                        match self.peek() {
                            None => return Err(SyntaxError("unterminated quoted string".into())),
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(c) => {
                                lit.push(c);
                                self.i += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.i += 1;
                    any = true;
                    loop {
                        match self.peek() {
                            None => return Err(SyntaxError("unterminated quoted string".into())),
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some('\\') => {
                                match self.peek2() {
                                    Some(n @ ('$' | '`' | '"' | '\\')) => lit.push(n),
                                    Some('\n') => {}
                                    Some(n) => {
                                        lit.push('\\');
                                        lit.push(n);
                                    }
                                    None => {
                                        return Err(SyntaxError(
                                            "unterminated quoted string".into(),
                                        ));
                                    }
                                }
                                self.i += 2;
                            }
                            Some('$') => self.dollar(&mut lit, &mut parts)?,
                            Some('`') => {
                                flush(&mut lit, &mut parts);
                                parts.push(self.backtick()?);
                            }
                            Some(c) => {
                                lit.push(c);
                                self.i += 1;
                            }
                        }
                    }
                }
                '\\' => {
                    match self.peek2() {
                        Some('\n') => {}
                        Some(n) => lit.push(n),
                        None => {}
                    }
                    self.i += 2;
                    any = true;
                }
                '$' => {
                    self.dollar(&mut lit, &mut parts)?;
                    any = true;
                }
                '`' => {
                    flush(&mut lit, &mut parts);
                    parts.push(self.backtick()?);
                    any = true;
                }
                c => {
                    lit.push(c);
                    self.i += 1;
                    any = true;
                }
            }
        }
        flush(&mut lit, &mut parts);
        if any && parts.is_empty() {
            // `''`: an empty but present argument.
            parts.push(Part::Lit(String::new()));
        }
        Ok(Word(parts))
    }

    fn dollar(&mut self, lit: &mut String, parts: &mut Vec<Part>) -> Result<(), SyntaxError> {
        self.i += 1;
        match self.peek() {
            Some('?') => {
                self.i += 1;
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(lit)));
                }
                parts.push(Part::Status);
            }
            Some('(') => {
                self.i += 1;
                if self.depth >= MAX_DEPTH {
                    return Err(SyntaxError("substitutions nested too deeply".into()));
                }
                self.depth += 1;
                let inner = self.script(true)?;
                self.depth -= 1;
                if self.peek() != Some(')') {
                    return Err(SyntaxError("unterminated $(".into()));
                }
                self.i += 1;
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(lit)));
                }
                parts.push(Part::Subst(inner));
            }
            Some('{') => {
                let start = self.i + 1;
                let Some(end) = self.s[start..].iter().position(|c| *c == '}') else {
                    return Err(SyntaxError("unterminated ${".into()));
                };
                let name: String = self.s[start..start + end].iter().collect();
                self.i = start + end + 1;
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(lit)));
                }
                parts.push(if name == "?" {
                    Part::Status
                } else {
                    Part::Var(name)
                });
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(lit)));
                }
                parts.push(Part::Var(name));
            }
            _ => lit.push('$'),
        }
        Ok(())
    }

    fn backtick(&mut self) -> Result<Part, SyntaxError> {
        self.i += 1;
        let start = self.i;
        let Some(end) = self.s[start..].iter().position(|c| *c == '`') else {
            return Err(SyntaxError("unterminated `".into()));
        };
        self.i = start + end + 1;
        if self.depth >= MAX_DEPTH {
            return Err(SyntaxError("substitutions nested too deeply".into()));
        }
        let inner: Vec<char> = self.s[start..start + end].to_vec();
        let mut sub = Parser {
            s: &inner,
            i: 0,
            depth: self.depth + 1,
        };
        let script = sub.script(false)?;
        Ok(Part::Subst(script))
    }
}

/// What one built-in produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
}

impl CmdOutput {
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: stdout.into(),
            stderr: Vec::new(),
            code: 0,
        }
    }
    pub fn err(code: i32, stderr: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: Vec::new(),
            stderr: stderr.into(),
            code,
        }
    }
}

/// The command table the evaluator dispatches to.
#[async_trait]
pub trait Builtins: Send + Sync {
    async fn run(&self, argv: &[String], stdin: &[u8]) -> CmdOutput;
    /// Writes a redirection target (`/dev/null` is handled by the evaluator).
    async fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), String>;
    async fn read_file(&self, path: &str) -> Result<Vec<u8>, String>;
}

/// Output of a whole command line, stdout/stderr events in the order they happened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScriptOutput {
    pub events: Vec<(u8, Vec<u8>)>,
    pub code: i32,
}

impl ScriptOutput {
    pub fn stdout(&self) -> Vec<u8> {
        self.events
            .iter()
            .filter(|(s, _)| *s == 1)
            .flat_map(|(_, d)| d.clone())
            .collect()
    }
    pub fn stderr(&self) -> Vec<u8> {
        self.events
            .iter()
            .filter(|(s, _)| *s == 2)
            .flat_map(|(_, d)| d.clone())
            .collect()
    }
}

/// Parses and evaluates a command line. Syntax errors behave like `sh -c`: message on
/// stderr, exit 2.
pub async fn run_line(line: &str, builtins: &dyn Builtins) -> ScriptOutput {
    match parse(line) {
        Ok(script) => {
            let mut sh = Shell {
                builtins,
                vars: HashMap::new(),
                status: 0,
            };
            let mut out = ScriptOutput::default();
            sh.script(&script, &mut out.events).await;
            out.code = sh.status;
            out
        }
        Err(e) => ScriptOutput {
            events: vec![(2, format!("{e}\n").into_bytes())],
            code: 2,
        },
    }
}

struct Shell<'a> {
    builtins: &'a dyn Builtins,
    vars: HashMap<String, String>,
    status: i32,
}

type Events = Vec<(u8, Vec<u8>)>;
type BoxFut<'f> = Pin<Box<dyn Future<Output = ()> + Send + 'f>>;
type BoxFutS<'f> = Pin<Box<dyn Future<Output = String> + Send + 'f>>;

fn push(events: &mut Events, stream: u8, data: Vec<u8>) {
    if data.is_empty() {
        return;
    }
    match events.last_mut() {
        Some((s, d)) if *s == stream => d.extend_from_slice(&data),
        _ => events.push((stream, data)),
    }
}

impl<'a> Shell<'a> {
    fn script<'f>(&'f mut self, s: &'f Script, events: &'f mut Events) -> BoxFut<'f> {
        Box::pin(async move {
            for ao in &s.0 {
                self.pipeline(&ao.first, events).await;
                for (conn, p) in &ao.rest {
                    let run = match conn {
                        Connector::And => self.status == 0,
                        Connector::Or => self.status != 0,
                    };
                    if run {
                        self.pipeline(p, events).await;
                    }
                }
            }
        })
    }

    fn expand<'f>(&'f mut self, w: &'f Word) -> BoxFutS<'f> {
        Box::pin(async move {
            let mut s = String::new();
            for part in &w.0 {
                match part {
                    Part::Lit(l) => s.push_str(l),
                    Part::Status => s.push_str(&self.status.to_string()),
                    Part::Var(name) => s.push_str(self.vars.get(name).map_or("", String::as_str)),
                    Part::Subst(script) => {
                        let mut ev = Events::new();
                        let saved = self.status;
                        self.script(script, &mut ev).await;
                        let _ = saved;
                        let out: Vec<u8> = ev
                            .iter()
                            .filter(|(st, _)| *st == 1)
                            .flat_map(|(_, d)| d.clone())
                            .collect();
                        let text = String::from_utf8_lossy(&out);
                        s.push_str(text.trim_end_matches('\n'));
                    }
                }
            }
            s
        })
    }

    fn pipeline<'f>(&'f mut self, p: &'f Pipeline, events: &'f mut Events) -> BoxFut<'f> {
        Box::pin(async move {
            let mut stdin: Vec<u8> = Vec::new();
            let n = p.0.len();
            for (i, cmd) in p.0.iter().enumerate() {
                let last = i + 1 == n;
                let mut argv = Vec::with_capacity(cmd.words.len());
                for w in &cmd.words {
                    argv.push(self.expand(w).await);
                }
                let mut assigned = Vec::new();
                for (name, w) in &cmd.assignments {
                    let v = self.expand(w).await;
                    assigned.push((name.clone(), v));
                }
                let mut out = if argv.is_empty() {
                    for (k, v) in assigned {
                        self.vars.insert(k, v);
                    }
                    CmdOutput::default()
                } else {
                    let mut input = std::mem::take(&mut stdin);
                    for r in &cmd.redirs {
                        if let Redir::FromFile(w) = r {
                            let path = self.expand(w).await;
                            match self.builtins.read_file(&path).await {
                                Ok(d) => input = d,
                                Err(e) => {
                                    push(
                                        events,
                                        2,
                                        format!("/system/bin/sh: {path}: {e}\n").into_bytes(),
                                    );
                                    self.status = 1;
                                    return;
                                }
                            }
                        }
                    }
                    self.builtins.run(&argv, &input).await
                };
                for r in &cmd.redirs {
                    match r {
                        Redir::ErrToOut => {
                            let e = std::mem::take(&mut out.stderr);
                            out.stdout.extend_from_slice(&e);
                        }
                        Redir::OutToErr => {
                            let o = std::mem::take(&mut out.stdout);
                            out.stderr.extend_from_slice(&o);
                        }
                        Redir::ToFile {
                            fd: fd @ (1 | 2),
                            append,
                            target,
                        } => {
                            let path = self.expand(target).await;
                            let data = if *fd == 1 {
                                std::mem::take(&mut out.stdout)
                            } else {
                                std::mem::take(&mut out.stderr)
                            };
                            if path != "/dev/null"
                                && let Err(e) =
                                    self.builtins.write_file(&path, &data, *append).await
                            {
                                out.stderr.extend_from_slice(
                                    format!("/system/bin/sh: {path}: {e}\n").as_bytes(),
                                );
                                out.code = 1;
                            }
                        }
                        Redir::ToFile { .. } | Redir::FromFile(_) => {}
                    }
                }
                push(events, 2, out.stderr);
                if last {
                    push(events, 1, out.stdout);
                } else {
                    stdin = out.stdout;
                }
                self.status = out.code;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A table that records what ran: `echo` and `false` plus a file store, which is all the
    /// evaluator's semantics need.
    #[derive(Default)]
    struct Rec {
        ran: Mutex<Vec<Vec<String>>>,
        files: Mutex<HashMap<String, Vec<u8>>>,
    }

    #[async_trait]
    impl Builtins for Rec {
        async fn run(&self, argv: &[String], stdin: &[u8]) -> CmdOutput {
            self.ran.lock().unwrap().push(argv.to_vec());
            match argv[0].as_str() {
                "echo" => CmdOutput::ok(format!("{}\n", argv[1..].join(" "))),
                "false" => CmdOutput::err(1, ""),
                "upper" => CmdOutput::ok(String::from_utf8_lossy(stdin).to_uppercase()),
                "warn" => CmdOutput::err(0, "w\n"),
                other => CmdOutput::err(127, format!("/system/bin/sh: {other}: not found\n")),
            }
        }
        async fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), String> {
            let mut f = self.files.lock().unwrap();
            let e = f.entry(path.to_owned()).or_default();
            if !append {
                e.clear();
            }
            e.extend_from_slice(data);
            Ok(())
        }
        async fn read_file(&self, path: &str) -> Result<Vec<u8>, String> {
            self.files
                .lock()
                .unwrap()
                .get(path)
                .cloned()
                .ok_or_else(|| "No such file or directory".into())
        }
    }

    async fn run(line: &str) -> (ScriptOutput, Rec) {
        let rec = Rec::default();
        let out = run_line(line, &rec).await;
        (out, rec)
    }

    fn s(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[tokio::test]
    async fn quoting_and_escapes() {
        let (o, r) = run(r#"echo 'a b'  "c  $? d" e\ f "x\"y" '$(id)'"#).await;
        assert_eq!(s(o.stdout()), "a b c  0 d e f x\"y $(id)\n");
        assert_eq!(r.ran.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn sequences_and_conditionals() {
        let (o, _) = run("false && echo no || echo yes; echo $?").await;
        assert_eq!(s(o.stdout()), "yes\n0\n");
        let (o, _) = run("nosuch; echo after").await;
        assert_eq!(s(o.stdout()), "after\n");
        assert_eq!(s(o.stderr()), "/system/bin/sh: nosuch: not found\n");
        let (o, _) = run("nosuch").await;
        assert_eq!(o.code, 127);
    }

    #[tokio::test]
    async fn unquoted_injection_is_dispatched_not_hidden() {
        let (_, r) = run("echo hello; reboot").await;
        let ran = r.ran.lock().unwrap().clone();
        assert_eq!(
            ran,
            vec![
                vec!["echo".to_string(), "hello".into()],
                vec!["reboot".into()]
            ]
        );
        let (o, r) = run("echo $(echo id)x `echo b`").await;
        assert_eq!(s(o.stdout()), "idx b\n");
        assert_eq!(r.ran.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn quoted_text_is_never_dispatched() {
        let text = "hello; reboot $(id) `id` && rm -rf / | x 'q' \"d\"";
        let (o, r) = run(&format!("echo {}", quote(text))).await;
        assert_eq!(s(o.stdout()), format!("{text}\n"));
        assert_eq!(r.ran.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn pipes_and_redirections() {
        let (o, _) = run("echo abc | upper").await;
        assert_eq!(s(o.stdout()), "ABC\n");
        let (o, r) = run("echo one > /f; echo two >> /f; warn 2>/dev/null; warn 2>&1").await;
        assert_eq!(s(o.stdout()), "w\n");
        assert_eq!(r.files.lock().unwrap()["/f"], b"one\ntwo\n");
        let (o, _) = run("upper < /missing").await;
        assert_eq!(o.code, 1);
    }

    #[tokio::test]
    async fn syntax_errors_exit_2() {
        for bad in [
            "echo 'open",
            "echo \"open",
            "| x",
            "echo $(x",
            "a && ",
            "(x)",
            "echo `x",
        ] {
            let (o, r) = run(bad).await;
            assert_eq!(o.code, 2, "{bad}");
            assert!(s(o.stderr()).contains("syntax error"), "{bad}");
            assert!(r.ran.lock().unwrap().is_empty(), "{bad}");
        }
    }

    #[tokio::test]
    async fn assignments_and_vars() {
        let (o, _) = run("X=1; echo $X${X}$UNSET").await;
        assert_eq!(s(o.stdout()), "11\n");
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(line in ".{0,80}") {
            let _ = parse(&line);
        }

        #[test]
        fn quote_roundtrips(text in ".{0,40}") {
            let script = parse(&format!("echo {}", quote(&text))).unwrap();
            let words = &script.0[0].first.0[0].words;
            proptest::prop_assert_eq!(words.len(), 2);
            proptest::prop_assert_eq!(&words[1].0, &vec![Part::Lit(text.clone())]);
        }
    }
}
