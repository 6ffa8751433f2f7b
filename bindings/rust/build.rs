//! Finds libtops: $TOPS_DIR (an install prefix or a build tree), pkg-config's
//! tops.pc, or the repository's CMake build tree (../../build and siblings).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn has_lib(dir: &Path) -> bool {
    dir.join("libtops.so").exists()
}

fn from_tops_dir() -> Option<PathBuf> {
    let root = PathBuf::from(env::var_os("TOPS_DIR")?);
    [root.join("lib"), root.join("lib64"), root.clone()].into_iter().find(|d| has_lib(d))
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new("pkg-config").args(["--variable=libdir", "tops"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    has_lib(&dir).then_some(dir)
}

fn from_build_tree() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ["build", "build-cpu", "build-bind"].iter().map(|b| repo.join(b)).find(|d| has_lib(d))
}

fn main() {
    println!("cargo:rerun-if-env-changed=TOPS_DIR");
    println!("cargo:rerun-if-changed=../../include/tops/tops.h");
    let dir = from_tops_dir().or_else(from_pkg_config).or_else(from_build_tree).unwrap_or_else(|| {
        panic!("libtops.so not found: set TOPS_DIR to an install prefix or build tree, install tops.pc, \
                or build the repository with `cmake --preset default && cmake --build --preset default`")
    });
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=tops");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:rustc-env=TOPS_LIB_DIR={}", dir.display());
    // the header the header-match test checks: $TOPS_INCLUDE_DIR, else the repository's
    println!("cargo:rerun-if-env-changed=TOPS_INCLUDE_DIR");
    let include = env::var_os("TOPS_INCLUDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include"));
    println!("cargo:rustc-env=TOPS_INCLUDE_DIR={}", include.canonicalize().unwrap_or(include).display());
}
