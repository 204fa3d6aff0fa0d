//! `-o` leaves no temp file behind (issue 18): a temp file that an interrupted earlier write
//! left beside the target (`.NAME.XXXXXX.tmp`) is removed by the next write to that target,
//! and nothing else in the directory is touched.

use std::fs;
use std::path::Path;
use std::process::Command;

const MODULE: &str = "graph @g {\n  %e = empty\n}\n";

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn write_removes_a_stale_temp_of_its_target_and_keeps_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("in.cgir"), MODULE).unwrap();
    fs::write(d.join("out.cgir"), "old contents\n").unwrap();
    // What a write killed between naming its temp file and the rename leaves.
    let stale = d.join(".out.cgir.AbC123.tmp");
    fs::write(&stale, "half of an earlier output").unwrap();
    // Near misses of the pattern, another target's temp file, and a user's file: all kept.
    let kept = [
        ".out.cgir.AbC12.tmp",      // 5 random characters, not 6
        ".out.cgir.AbC123.tmp.bak", // suffix differs
        ".out.cgir.Ab-123.tmp",     // not alphanumeric
        "out.cgir.AbC123.tmp",      // no leading dot
        ".other.cgir.AbC123.tmp",   // another target
        "notes.txt",
    ];
    for k in kept {
        fs::write(d.join(k), k).unwrap();
    }
    // A link named like our temp file is not ours to remove (nor is what it points to).
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.join("notes.txt"), d.join(".out.cgir.Link99.tmp")).unwrap();
    // Only files last changed before the writing process started are stale (a concurrent
    // writer's temp file is younger); the start time is known to about 20 ms.
    std::thread::sleep(std::time::Duration::from_millis(200));

    let target = d.join("out.cgir");
    let o = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .args(["fmt", d.join("in.cgir").to_str().unwrap(), "-o", target.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_to_string(&target).unwrap(), MODULE);
    assert!(!stale.exists(), "the stale temp file is still there: {:?}", names(d));
    for k in kept {
        assert_eq!(fs::read_to_string(d.join(k)).unwrap(), k, "{k} was changed or removed");
    }
    let mut expected: Vec<String> = kept.iter().map(|k| k.to_string()).collect();
    expected.extend(["in.cgir".to_string(), "out.cgir".to_string()]);
    #[cfg(unix)]
    {
        assert!(fs::symlink_metadata(d.join(".out.cgir.Link99.tmp")).unwrap().file_type().is_symlink());
        expected.push(".out.cgir.Link99.tmp".to_string());
    }
    expected.sort();
    // And the write itself left no temp file of its own.
    assert_eq!(names(d), expected);
}
