//! The -sys declarations must match include/tops/tops.h exactly. The test
//! reads the header, lists every enumerator/#define constant, every field of
//! every struct and every TOPS_API function, compiles a C program against the
//! header that prints the constants' values, the structs' sizes and the
//! fields' offsets, and compares both ways with tops::sys: a constant, field
//! or function added, removed, renamed, retyped or moved on one side fails.
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use tops::sys;

struct Header {
    constants: Vec<String>,
    structs: Vec<(String, Vec<String>)>,
    functions: Vec<String>,
}

fn strip_comment(line: &str) -> &str {
    let line = line.split("/*").next().unwrap();
    line.split("//").next().unwrap().trim()
}

fn ident_at_start(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

fn parse_header(text: &str) -> Header {
    let mut h = Header { constants: vec![], structs: vec![], functions: vec![] };
    let mut in_enum = false;
    let mut current: Option<(String, Vec<String>)> = None;
    let mut pending_api = false;
    for raw in text.lines() {
        let line = strip_comment(raw);
        if let Some(rest) = line.strip_prefix("#define TOPS_") {
            let name = ident_at_start(rest);
            let after = &rest[name.len()..];
            if !after.starts_with('(') && !after.trim().is_empty() && name != "API" {
                h.constants.push(format!("TOPS_{name}"));
            }
            continue;
        }
        if line.starts_with("typedef enum") && line.ends_with('{') {
            in_enum = true;
            continue;
        }
        if in_enum {
            if line.starts_with('}') {
                in_enum = false;
            } else if line.starts_with("TOPS_") {
                h.constants.push(ident_at_start(line).to_string());
            }
            continue;
        }
        if line.starts_with("typedef struct") && line.ends_with('{') {
            current = Some((String::new(), vec![]));
            continue;
        }
        if let Some((_, fields)) = current.as_mut() {
            if let Some(rest) = line.strip_prefix('}') {
                let name = rest.trim().trim_end_matches(';').trim().to_string();
                let (_, fields) = current.take().unwrap();
                h.structs.push((name, fields));
            } else if line.ends_with(';') {
                let decl = line.trim_end_matches(';');
                let decl = decl.split('[').next().unwrap().trim();
                fields.push(decl.rsplit(|c: char| c == ' ' || c == '*').next().unwrap().to_string());
            }
            continue;
        }
        if line.starts_with("TOPS_API") || pending_api {
            match line.find('(') {
                Some(p) => {
                    let before = line[..p].trim_end();
                    let name = before.rsplit(|c: char| c == ' ' || c == '*').next().unwrap();
                    h.functions.push(name.to_string());
                    pending_api = false;
                }
                None => pending_api = line.starts_with("TOPS_API") && !line.contains("define"),
            }
        }
    }
    h
}

fn header_text() -> String {
    let path = PathBuf::from(env!("TOPS_INCLUDE_DIR")).join("tops/tops.h");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs a C program against tops.h that prints "C name value", "S struct size", "O struct field offset".
fn c_layout(h: &Header) -> BTreeMap<String, i64> {
    let mut src = String::from("#include <stdio.h>\n#include <stddef.h>\n#include <tops/tops.h>\nint main(void) {\n");
    for c in &h.constants {
        src += &format!("  printf(\"C {c} %lld\\n\", (long long)({c}));\n");
    }
    for (s, fields) in &h.structs {
        src += &format!("  printf(\"S {s} %zu\\n\", sizeof({s}));\n");
        for f in fields {
            src += &format!("  printf(\"O {s} {f} %zu\\n\", offsetof({s}, {f}));\n");
        }
    }
    src += "  return 0;\n}\n";
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (c_file, exe) = (dir.join("header_match.c"), dir.join("header_match"));
    fs::write(&c_file, src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Werror", "-I", env!("TOPS_INCLUDE_DIR"), "-o"])
        .arg(&exe)
        .arg(&c_file)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc}: {e}"));
    assert!(status.success(), "the C program over tops.h did not compile");
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').unwrap();
            (key.to_string(), value.parse().unwrap())
        })
        .collect()
}

fn rust_layout() -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for (name, value) in sys::ALL_CONSTANTS {
        m.insert(format!("C {name}"), *value);
    }
    for (s, f, bytes) in sys::layouts() {
        let key = if f == "sizeof" { format!("S {s}") } else { format!("O {s} {f}") };
        m.insert(key, bytes as i64);
    }
    m
}

#[test]
fn parser_sees_the_whole_header() {
    let h = parse_header(&header_text());
    assert!(h.constants.len() > 60, "{:?}", h.constants);
    assert!(h.structs.iter().any(|(s, f)| s == "tops_attention_desc_t" && f.len() == 15));
    assert!(h.functions.iter().any(|f| f == "tops_attention_create"));
}

#[test]
fn constants_and_layouts_match_the_header() {
    let h = parse_header(&header_text());
    let c = c_layout(&h);
    let rust = rust_layout();
    let mut diffs = vec![];
    for (k, v) in &c {
        match rust.get(k) {
            Some(r) if r == v => {}
            Some(r) => diffs.push(format!("{k}: header {v}, rust {r}")),
            None => diffs.push(format!("{k}: in the header, missing in tops::sys")),
        }
    }
    for k in rust.keys().filter(|k| !c.contains_key(*k)) {
        diffs.push(format!("{k}: in tops::sys, not in the header"));
    }
    assert!(diffs.is_empty(), "tops::sys differs from tops.h:\n{}", diffs.join("\n"));
}

#[test]
fn functions_match_the_header_and_the_library() {
    let h = parse_header(&header_text());
    let sys_src = include_str!("../src/sys.rs");
    let declared: Vec<&str> = sys_src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .map(|l| ident_at_start(l))
        .filter(|n| n.starts_with("tops_"))
        .collect();
    let missing: Vec<_> = h.functions.iter().filter(|f| !declared.contains(&f.as_str())).collect();
    let extra: Vec<_> = declared.iter().filter(|f| !h.functions.iter().any(|g| g == *f)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing in sys.rs: {missing:?}; not in tops.h: {extra:?}");
    let lib = PathBuf::from(env!("TOPS_LIB_DIR")).join("libtops.so");
    let nm = Command::new("nm").arg("-D").arg("--defined-only").arg(&lib).output();
    let Ok(nm) = nm else {
        eprintln!("nm not available: exported symbols not checked");
        return;
    };
    let syms = String::from_utf8_lossy(&nm.stdout);
    let exported: Vec<&str> = syms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let unexported: Vec<_> = h.functions.iter().filter(|f| !exported.contains(&f.as_str())).collect();
    assert!(unexported.is_empty(), "{} does not export {unexported:?}", lib.display());
}
