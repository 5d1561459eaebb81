//! A Secret Service of the test's own (GNOME Keyring on a private D-Bus session bus), a bus
//! address where nothing listens, and a search of a test's files for a secret: for the tests
//! of where the host keeps secrets, none of which may reach the keyring of the person running
//! them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A session bus address where nothing listens: the host finds no Secret Service (and no test
/// reaches the keyring of the person running the tests).
pub const NO_BUS: &str = "unix:path=/nonexistent/mcp-apps-host-test-bus";

/// A private D-Bus session bus with GNOME Keyring's Secret Service on it, in `home` (its
/// login keyring made and unlocked with a password given on stdin, as a desktop session's
/// PAM module does); both daemons end with the guard.
pub struct PrivateKeyring {
    pub address: String,
    home: PathBuf,
    children: Vec<std::process::Child>,
}

impl PrivateKeyring {
    pub fn start(home: &Path) -> Self {
        use std::io::{BufRead as _, Write as _};
        use std::os::unix::fs::PermissionsExt as _;
        let run = home.join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut dbus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .env("HOME", home)
            .env("XDG_RUNTIME_DIR", &run)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("dbus-daemon runs (Debian dbus-daemon, installed by scripts/setup)");
        let mut address = String::new();
        std::io::BufReader::new(dbus.stdout.take().unwrap()).read_line(&mut address).unwrap();
        let mut guard = Self { address: address.trim().to_owned(), home: home.to_owned(), children: vec![dbus] };
        assert!(guard.address.starts_with("unix:"), "dbus-daemon said {address:?}");
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets", "--foreground"])
            .env("DBUS_SESSION_BUS_ADDRESS", &guard.address)
            .env("HOME", home)
            .env("XDG_RUNTIME_DIR", &run)
            .env("XDG_DATA_HOME", home.join("data"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon runs (Debian gnome-keyring, installed by scripts/setup)");
        keyring.stdin.take().unwrap().write_all(b"keyring-test-password\n").unwrap();
        guard.children.push(keyring);
        // Ready when the login collection is the default one.
        let started = std::time::Instant::now();
        loop {
            let out = Command::new("dbus-send")
                .args(["--session", "--print-reply", "--reply-timeout=2000", "--dest=org.freedesktop.secrets"])
                .args(["/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", "string:default"])
                .env("DBUS_SESSION_BUS_ADDRESS", &guard.address)
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).contains("/collection/login") {
                break guard;
            }
            assert!(
                started.elapsed().as_secs() < 20,
                "the Secret Service did not come up: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// `secret-tool lookup ATTRIBUTE VALUE ...` on this bus (libsecret-tools).
    pub fn lookup(&self, attributes: &[&str]) -> Option<String> {
        let out = Command::new("secret-tool")
            .arg("lookup")
            .args(attributes)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", &self.home)
            .output()
            .expect("secret-tool runs (Debian libsecret-tools, installed by scripts/setup)");
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for PrivateKeyring {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every file under `dir` that holds `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if kind.is_file()
            && std::fs::read(&path).unwrap_or_default().windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            found.push(path);
        }
    }
    found
}

/// `secret-tool search --all ATTRIBUTE VALUE ...` on this bus: every matching item, attributes
/// and secret, as libsecret prints them.
impl PrivateKeyring {
    pub fn search(&self, attributes: &[&str]) -> String {
        let out = Command::new("secret-tool")
            .args(["search", "--all", "--unlock"])
            .args(attributes)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", &self.home)
            .output()
            .expect("secret-tool runs (Debian libsecret-tools, installed by scripts/setup)");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }
}
