//! A host in your own app in twenty lines: connect to a server, show a tool's View, get events.
//!
//! `cargo run --example embed -- "<server command line>" <tool> [trace.jsonl]`

use mcp_apps_host::host::ExitAfter;
use mcp_apps_host::host::Host;

fn main() -> mcp_apps_host::Result<()> {
    let mut args = std::env::args().skip(1);
    let (server, tool) = (args.next().expect("a server command line"), args.next().expect("a tool name"));
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut builder = Host::builder().server_command(&server).open_tool(&tool, Default::default()).events(events);
    if let Some(trace) = args.next() {
        // Headless runs (CI) stop once the View has its result; people close the window.
        builder = builder.trace(trace).exit_after(ExitAfter::Result, std::time::Duration::from_secs(30));
    }
    let code = builder.build()?.run()?;
    while let Ok((view, event)) = received.try_recv() {
        println!("{view}: {event:?}");
    }
    std::process::exit(code);
}
