//! One app per config file. The first app on a config file listens on a socket in the host's
//! private runtime directory; a second launch on the same file (from the applications menu, an
//! install link from the browser, a `.mcpb` from the file manager, `mcp-apps-host open`) hands
//! what it was given to that app and ends: the running app raises its window and shows the
//! install dialog there. No second window, no second process for every server, no second
//! conversation.
//!
//! The socket is `app-<hash of the config file's path>.sock` in a directory only this user can
//! open (`$XDG_RUNTIME_DIR/mcp-apps-host`): another user cannot knock. One knock is one JSON
//! line (at most [`MAX_KNOCK`] bytes, read within [`KNOCK_READ`]); the answer is one line too.
//! A socket left by an app that died is found dead (nothing accepts on it) and replaced.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::install_request::InstallRequest;

/// The longest knock: a link or a path, with room for a large install link.
const MAX_KNOCK: u64 = 256 * 1024;
/// How long a knocking process may take to say what it wants.
const KNOCK_READ: Duration = Duration::from_secs(5);
/// How long a second launch waits for the running app's answer: reading a `server.json` from
/// a web address may take a while before the dialog can be shown.
const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// Knocks handled at once; more are told to try again (a loop of launches cannot pile up
/// threads in the running app).
const MAX_KNOCKS_AT_ONCE: usize = 4;

/// What a second launch asks of the running app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "knock", rename_all = "camelCase")]
pub(crate) enum Knock {
    /// Show the window (a second launch from the menu).
    Raise,
    /// Read the config file again (a server was installed from a terminal) and show the window.
    Reload,
    /// Ask the person about installing this (an install link, or a file's absolute path).
    Open {
        /// The link or path.
        source: String,
    },
}

/// The running app's answer.
#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What arrives at the running app from a second launch.
pub(crate) enum Arrival {
    /// Show the window.
    Raise,
    /// Read the config file again.
    Reload,
    /// Something to install, read once here, or why it could not be read (shown in the window:
    /// nobody sees the second launch's stderr).
    Install(Result<InstallRequest, String>),
}

impl std::fmt::Debug for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Raise => f.write_str("Raise"),
            Self::Reload => f.write_str("Reload"),
            Self::Install(Ok(r)) => write!(f, "Install({:?})", r.name),
            Self::Install(Err(e)) => write!(f, "Install(Err({e:?}))"),
        }
    }
}

/// Turns a source (a link or a path) into the install the app's dialog asks about.
pub(crate) type Opener = Arc<dyn Fn(String) -> Result<InstallRequest, String> + Send + Sync>;

/// The first app's door and how it reads what is opened, handed to the app by `run`.
#[derive(Clone, Default)]
pub(crate) struct FrontDoor(Arc<Mutex<Option<Unopened>>>);

/// A door not served yet, with how it will read what is opened.
type Unopened = (Door, Option<Opener>);

impl std::fmt::Debug for FrontDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontDoor").finish_non_exhaustive()
    }
}

impl FrontDoor {
    pub(crate) fn new(door: Door, opener: Option<Opener>) -> Self {
        Self(Arc::new(Mutex::new(Some((door, opener)))))
    }

    /// Opens the door: knocks arrive at `arrive` from now on.
    pub(crate) fn serve(&self, arrive: impl Fn(Arrival) -> bool + Send + Sync + 'static) {
        if let Some((door, opener)) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            door.serve(opener, arrive);
        }
    }
}

/// The outcome of [`claim`].
pub(crate) enum Claim {
    /// This is the first app on the config file: it listens here.
    First(Door),
    /// Another app runs on it and took the knock.
    Handed,
}

/// The socket of the first app on a config file. Removed when the app ends.
pub(crate) struct Door {
    listener: UnixListener,
    path: PathBuf,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door").field("path", &self.path).finish()
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The socket of the apps on `config`, in `runtime`.
fn socket_path(runtime: &Path, config: &Path) -> PathBuf {
    let config = std::fs::canonicalize(config).unwrap_or_else(|_| std::path::absolute(config).unwrap_or_default());
    let digest = Sha256::digest(config.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    runtime.join(format!("app-{hex}.sock"))
}

/// Becomes the app on `config`, or hands `knock` to the one running on it. An error means
/// neither could be done (no private runtime directory): the caller runs on its own.
pub(crate) fn claim(config: &Path, knock: &Knock) -> std::io::Result<Claim> {
    claim_in(&crate::private_file::runtime_dir()?, config, knock)
}

/// [`claim`] with the sockets in `runtime`.
fn claim_in(runtime: &Path, config: &Path, knock: &Knock) -> std::io::Result<Claim> {
    let path = socket_path(runtime, config);
    for _ in 0..3 {
        match UnixStream::connect(&path) {
            Ok(stream) => {
                knock_on(stream, knock)?;
                return Ok(Claim::Handed);
            }
            // Nobody there: no socket, or one an app that died left behind.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
                if e.kind() == std::io::ErrorKind::ConnectionRefused {
                    let _ = std::fs::remove_file(&path);
                }
                match UnixListener::bind(&path) {
                    Ok(listener) => return Ok(Claim::First(Door { listener, path })),
                    // Another launch bound it first: knock on its door instead.
                    Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!("{} is neither free nor answering", path.display())))
}

/// Says `knock` on `stream` and waits for the running app's answer.
fn knock_on(mut stream: UnixStream, knock: &Knock) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(knock).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.set_write_timeout(Some(KNOCK_READ))?;
    stream.write_all(&line)?;
    stream.set_read_timeout(Some(ANSWER_WAIT))?;
    let mut answer = String::new();
    BufReader::new(stream.take(MAX_KNOCK)).read_line(&mut answer)?;
    match serde_json::from_str::<Answer>(&answer) {
        Ok(Answer { error: None }) => Ok(()),
        Ok(Answer { error: Some(e) }) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::Error::other("the running app gave no answer")),
    }
}

impl Door {
    /// Takes knocks on a thread of its own until the app ends; each arrives at `arrive`.
    fn serve(self, opener: Option<Opener>, arrive: impl Fn(Arrival) -> bool + Send + Sync + 'static) {
        let arrive = Arc::new(arrive);
        let busy = Arc::new(AtomicUsize::new(0));
        let door = Arc::new(Mutex::new(self));
        let listener = match door.lock().unwrap_or_else(|e| e.into_inner()).listener.try_clone() {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("single instance: cannot listen: {e}");
                return;
            }
        };
        std::thread::Builder::new()
            .name("single-instance".into())
            .spawn(move || {
                // The door lives as long as this thread: the socket is removed when the process ends.
                let _door = door;
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    if busy.fetch_add(1, Ordering::SeqCst) >= MAX_KNOCKS_AT_ONCE {
                        busy.fetch_sub(1, Ordering::SeqCst);
                        answer(stream, Some("the app is busy with other launches: try again"));
                        continue;
                    }
                    let (arrive, busy, opener) = (arrive.clone(), busy.clone(), opener.clone());
                    let spawned = std::thread::Builder::new().name("single-instance-knock".into()).spawn(move || {
                        take_knock(stream, opener.as_ref(), &*arrive);
                        busy.fetch_sub(1, Ordering::SeqCst);
                    });
                    if spawned.is_err() {
                        tracing::warn!("single instance: no thread for a knock");
                    }
                }
            })
            .map(drop)
            .unwrap_or_else(|e| tracing::warn!("single instance: no thread: {e}"));
    }
}

/// Reads one knock from `stream`, passes it on, and answers.
fn take_knock(stream: UnixStream, opener: Option<&Opener>, arrive: &dyn Fn(Arrival) -> bool) {
    let _ = stream.set_read_timeout(Some(KNOCK_READ));
    let mut line = String::new();
    let read = stream.try_clone().map(|s| BufReader::new(s.take(MAX_KNOCK)).read_line(&mut line));
    let knock = match read {
        Ok(Ok(_)) => serde_json::from_str::<Knock>(&line),
        _ => {
            tracing::warn!("single instance: a launch knocked and said nothing readable");
            return;
        }
    };
    let arrival = match knock {
        Ok(Knock::Raise) => Arrival::Raise,
        Ok(Knock::Reload) => Arrival::Reload,
        Ok(Knock::Open { source }) => {
            tracing::info!("a second launch opened {source:?}: asking in this window");
            match opener {
                Some(open) => Arrival::Install(open(source)),
                None => Arrival::Install(Err("this app cannot install servers (it has no config file)".into())),
            }
        }
        Err(e) => {
            tracing::warn!("single instance: a knock that is not one: {e}");
            answer(stream, Some("not a knock this app understands"));
            return;
        }
    };
    let delivered = arrive(arrival);
    answer(stream, (!delivered).then_some("the app is ending"));
}

fn answer(mut stream: UnixStream, error: Option<&str>) {
    let mut line = serde_json::to_vec(&Answer { error: error.map(str::to_owned) }).unwrap_or_default();
    line.push(b'\n');
    let _ = stream.set_write_timeout(Some(KNOCK_READ));
    let _ = stream.write_all(&line);
}

impl super::Controller {
    /// A second launch knocked: the window comes forward, and what it opened is asked about here.
    pub(super) fn on_arrival(&mut self, arrival: Arrival) {
        let _ = self.ui.send_event(super::window::UserEvent::Window(super::window::WindowOp::Present));
        match arrival {
            Arrival::Raise => {}
            Arrival::Reload => self.reload_config(),
            Arrival::Install(Ok(request)) => {
                let waiting =
                    self.options.launch.install.as_ref().is_some_and(super::install_request::InstallSlot::is_full);
                if self.questions.install_open() || waiting {
                    self.status(
                        &format!(
                            "{} was opened while another server is being asked about: answer that one first, then \
                             open it again",
                            crate::consent::one_line_max(&request.name, 80)
                        ),
                        true,
                    );
                    return;
                }
                self.options.launch.install = Some(super::install_request::InstallSlot::new(request));
                if self.shell_page.is_ready() {
                    self.show_install_request();
                }
            }
            Arrival::Install(Err(e)) => {
                let text = format!("What you opened could not be installed: {e}");
                tracing::warn!("{text}");
                self.status(&text, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn a_second_launch_on_the_same_config_knocks_and_another_config_gets_its_own_app() {
        {
            let tmp = tempfile::tempdir().unwrap();
            let uid = crate::private_file::uid().unwrap();
            let runtime = crate::private_file::private_dir(&tmp.path().join("rt"), uid).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
            let Claim::First(door) = claim_in(&runtime, &a, &Knock::Raise).unwrap() else { panic!("the first app") };
            let (tx, rx) = mpsc::channel();
            let opener: Opener = Arc::new(|source| Err(format!("cannot read {source}")));
            door.serve(Some(opener), move |arrival| tx.send(format!("{arrival:?}")).is_ok());
            assert!(matches!(claim_in(&runtime, &a, &Knock::Raise).unwrap(), Claim::Handed));
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "Raise");
            let open = Knock::Open { source: "mcp-apps-host://install?bad".into() };
            assert!(matches!(claim_in(&runtime, &a, &open).unwrap(), Claim::Handed));
            let said = rx.recv_timeout(Duration::from_secs(5)).unwrap();
            assert!(said.contains("cannot read mcp-apps-host://install?bad"), "the error arrives in the app: {said}");
            // Another config file: an app of its own.
            assert!(matches!(claim_in(&runtime, &b, &Knock::Raise).unwrap(), Claim::First(_)));
        }
    }

    #[test]
    fn a_socket_left_by_a_dead_app_is_replaced_and_garbage_is_refused() {
        {
            let tmp = tempfile::tempdir().unwrap();
            let uid = crate::private_file::uid().unwrap();
            let runtime = crate::private_file::private_dir(&tmp.path().join("rt"), uid).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("mcp.json");
            // An app that died: its socket file stays, nothing listens on it.
            let path = socket_path(&runtime, &config);
            drop(UnixListener::bind(&path).unwrap());
            assert!(path.exists());
            let Claim::First(door) = claim_in(&runtime, &config, &Knock::Raise).unwrap() else {
                panic!("the dead socket replaced")
            };
            let (tx, rx) = mpsc::channel();
            door.serve(None, move |arrival| tx.send(format!("{arrival:?}")).is_ok());
            // Not a knock: refused, nothing arrives.
            let mut stream = UnixStream::connect(&path).unwrap();
            stream.write_all(b"{\"knock\": \"format-disk\"}\n").unwrap();
            let mut answer = String::new();
            BufReader::new(stream).read_line(&mut answer).unwrap();
            assert!(answer.contains("not a knock"), "{answer}");
            assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
            // The socket lives in a directory only this user can open.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
    }
}
