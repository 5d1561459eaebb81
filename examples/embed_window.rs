//! The host inside a window and event loop the embedder owns (a chat client, an IDE panel):
//! `Host::mount` puts the host's webview in the window, and the host's UI work arrives as one
//! variant of the embedder's own event type.
//!
//! `cargo run --example embed_window -- "<server command line>" <tool> [trace.jsonl]`

use std::time::Duration;

use mcp_apps_host::host::ExitAfter;
use mcp_apps_host::host::{Host, HostEvent};
use mcp_apps_host::tao::event::{Event, WindowEvent};
use mcp_apps_host::tao::event_loop::{ControlFlow, EventLoopBuilder};
use mcp_apps_host::tao::window::WindowBuilder;

/// The embedder's own events; the host's are one kind among them.
enum AppEvent {
    Host(HostEvent),
}

fn main() -> mcp_apps_host::Result<()> {
    let mut args = std::env::args().skip(1);
    let (server, tool) = (args.next().expect("a server command line"), args.next().expect("a tool name"));
    let event_loop = EventLoopBuilder::<AppEvent>::with_user_event().build();
    let window = WindowBuilder::new()
        .with_title("My app, with MCP Apps inside")
        .with_inner_size(mcp_apps_host::tao::dpi::LogicalSize::new(900.0, 700.0))
        .build(&event_loop)
        .expect("a window");

    let mut builder = Host::builder().server_command(&server).open_tool(&tool, Default::default());
    if let Some(trace) = args.next() {
        // Headless runs (CI) stop once the View has its result; people close the window.
        builder = builder.trace(trace).exit_after(ExitAfter::Result, Duration::from_secs(30));
    }
    let mut host = Some(builder.build()?.mount(&window, event_loop.create_proxy(), AppEvent::Host)?);

    event_loop.run(move |event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        match event {
            Event::UserEvent(AppEvent::Host(event)) => {
                if let Some(code) = host.as_mut().and_then(|h| h.handle(&window, event)) {
                    println!("the host finished with {code}; the app goes on until it decides to stop");
                    host = None; // drops the webview and stops the servers
                    *control_flow = ControlFlow::ExitWithCode(code);
                }
            }
            Event::WindowEvent { event: WindowEvent::CloseRequested, .. } => match &host {
                // Close the host gracefully first (Views get their teardown); exit once it is done.
                Some(h) => h.close(),
                None => *control_flow = ControlFlow::Exit,
            },
            Event::WindowEvent { event, .. } => {
                if let Some(h) = &host {
                    h.window_event(&window, &event);
                }
            }
            _ => {}
        }
    });
}
