//! Reading Rust source as plain text for the architecture checks: where
//! each function starts and ends, and which files a file imports. Good
//! enough for this crate's own code (rustfmt-formatted, no macros that
//! open braces in strings); not a Rust parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A line with its string and char literals blanked and its `//` comment
/// cut, so that braces inside them are not counted. `in_raw` carries an
/// open raw string (`r#"`) from line to line.
fn code_part(line: &str, in_raw: &mut bool) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if *in_raw {
            if b[i..].starts_with(b"\"#") {
                *in_raw = false;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        let c = b[i];
        if b[i..].starts_with(b"//") {
            break;
        } else if b[i..].starts_with(b"r#\"") {
            *in_raw = true;
            i += 3;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('{', '\n', '\''); a lifetime has no closing quote.
            i += if b[i + 1] == b'\\' { 4 } else { 3 };
        } else {
            // Only ASCII matters here (braces); other bytes stand as `_`.
            out.push(if c.is_ascii() { c as char } else { '_' });
            i += 1;
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn declared_fn(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let mut words = t.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == "fn" {
            let name = words.next()?;
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return (!name.is_empty()).then_some(name);
        }
        let modifier = w.starts_with("pub")
            || matches!(
                w,
                "const" | "async" | "unsafe" | "extern" | "\"C\"" | "default"
            );
        if !modifier {
            return None;
        }
    }
    None
}

/// Every function of `text` with its first line (1-based) and its length
/// in lines, from the `fn` line to its closing brace.
pub fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = declared_fn(line) else {
            continue;
        };
        let (mut depth, mut opened, mut in_raw) = (0i64, false, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let code = code_part(l, &mut in_raw);
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
            if !opened && code.trim_end().ends_with(';') {
                break; // a declaration without a body (trait method)
            }
        }
    }
    out
}

/// The module path of a file under `src` (`detect/stats/exact.rs` →
/// `detect::stats::exact`; `mod.rs`, `lib.rs` and `main.rs` name their
/// folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths a file names through `crate::`, `super::` or `self::`, with
/// `{a, b::c}` groups expanded, as module paths from the crate root.
fn named_paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    let b = code.as_bytes();
    while i < code.len() {
        let rest = &code[i..];
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| rest.starts_with(h) && (i == 0 || !ident(b[i - 1] as char)));
        let Some(head) = head else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut base: Vec<String> = match head {
            "crate::" => Vec::new(),
            "super::" => me[..me.len().saturating_sub(1)].to_vec(),
            _ => me.to_vec(),
        };
        let mut j = i + head.len();
        // More `super::` and plain segments.
        loop {
            let seg: String = code[j..].chars().take_while(|&c| ident(c)).collect();
            if seg.is_empty() {
                break;
            }
            if seg == "super" {
                base.pop();
            } else {
                base.push(seg.clone());
            }
            j += seg.len();
            if code[j..].starts_with("::") {
                j += 2;
            } else {
                break;
            }
        }
        if code[j..].starts_with('{') {
            let mut depth = 0;
            let mut end = j;
            for (k, c) in code[j..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = j + k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            for item in split_top_level(&code[j + 1..end]) {
                let mut p = base.clone();
                p.extend(
                    item.split("::")
                        .map(|s| s.trim().chars().take_while(|&c| ident(c)).collect())
                        .filter(|s: &String| !s.is_empty() && s != "self"),
                );
                out.push(p);
            }
            i = end + 1;
        } else {
            out.push(base);
            i = j.max(i + 1);
        }
    }
    out
}

/// The items of a `{...}` group, split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (k, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&group[start..]);
    out
}

/// The import graph of the files under `src`: for each file, the other
/// files its code (unit tests and comments left out by `code_of`) names.
pub fn import_graph(
    src: &Path,
    files: &[PathBuf],
    code_of: impl Fn(&str) -> String,
) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let by_module: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for f in files {
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let me = module_of(src, f);
        let mut to = BTreeSet::new();
        for path in named_paths(&code, &me) {
            // The longest prefix of the path that is a file.
            let hit = (1..=path.len())
                .rev()
                .find_map(|k| by_module.get(&path[..k]));
            if let Some(g) = hit.filter(|g| *g != f) {
                to.insert(g.clone());
            }
        }
        graph.insert(f.clone(), to);
    }
    graph
}

/// The circles of a graph: its strongly connected components of more than
/// one file (Tarjan's algorithm, iteratively deep enough for this crate).
pub fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    comp.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.found.push(comp);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}
