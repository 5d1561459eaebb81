//! `key`: the model's API key in the system keyring (or an owner-only file when there is
//! none), set without writing a file by hand, and where the host keeps secrets.

use std::io::{BufRead, IsTerminal};

use anyhow::{bail, Context};

use crate::secrets::{self, Secret};

/// What `key` does.
#[derive(Debug, clap::Subcommand)]
pub enum KeyAction {
    /// Keep a model API key, read from stdin (asked without echo in a terminal): in the system
    /// keyring (Secret Service) when one runs, else in an owner-only file. `run --model
    /// openai:...`/`anthropic:...` uses it when the environment and the config give no key.
    Set {
        /// Whose key it is.
        #[arg(long, value_enum, default_value = "openai")]
        provider: Provider,
    },
    /// Forget a stored model API key (from the keyring and its file).
    Delete {
        /// Whose key it is.
        #[arg(long, value_enum, default_value = "openai")]
        provider: Provider,
    },
    /// Say where secrets go now: the system keyring, or owner-only files (and why).
    Status,
}

/// A provider whose key the host keeps.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Provider {
    /// OpenAI (and OpenAI-compatible endpoints named with `openai:`).
    Openai,
    /// Anthropic.
    Anthropic,
}

impl Provider {
    fn word(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

/// Runs `key`.
pub fn key(action: KeyAction) -> anyhow::Result<i32> {
    match action {
        KeyAction::Set { provider } => {
            let value = read_key()?;
            if !crate::model::key_policy::key_shaped(&value) {
                bail!(
                    "that is not a key: one line of letters, digits and . _ ~ + / = - (at most 4,096); nothing was kept"
                );
            }
            let secret = Secret::model_key(provider.word());
            let place = secrets::blocking(|| secrets::store(&secret, &value)).map_err(anyhow::Error::msg)?;
            println!("the {} API key is kept in {place}", provider.word());
        }
        KeyAction::Delete { provider } => {
            let secret = Secret::model_key(provider.word());
            match secrets::blocking(|| secrets::delete(&secret)).map_err(anyhow::Error::msg)? {
                true => println!("forgot the {} API key", provider.word()),
                false => println!("no {} API key was kept", provider.word()),
            }
        }
        KeyAction::Status => match secrets::blocking(secrets::status) {
            Ok(()) => println!("secrets go to the system keyring (Secret Service)"),
            Err(why) => {
                let dir = secrets::secrets_dir()
                    .map_or_else(|| "(no data directory)".to_owned(), |d| d.display().to_string());
                println!("secrets go to owner-only files in {dir} (no system keyring: {why})");
            }
        },
    }
    Ok(0)
}

/// One line from stdin; in a terminal, asked with the echo off.
fn read_key() -> anyhow::Result<String> {
    let terminal = std::io::stdin().is_terminal();
    let stty = |arg: &str| std::process::Command::new("stty").arg(arg).status().is_ok_and(|s| s.success());
    if terminal {
        eprint!("API key: ");
        if !stty("-echo") {
            bail!("cannot turn the terminal's echo off to ask for the key: pipe it in instead");
        }
    }
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line).context("cannot read the key from stdin");
    if terminal {
        stty("echo");
        eprintln!();
    }
    read?;
    Ok(line.trim().to_owned())
}

/// The kept key of `provider` (`openai`, `anthropic`), if any; a keyring that cannot be read
/// is taken as no key (said at debug: most runs without a key need none).
pub(crate) fn stored_model_key(provider: &str) -> Option<String> {
    let secret = Secret::model_key(provider);
    match secrets::blocking(|| secrets::lookup(&secret)) {
        Ok(found) => found,
        Err(why) => {
            tracing::debug!("no stored {provider} API key: {why}");
            None
        }
    }
}
