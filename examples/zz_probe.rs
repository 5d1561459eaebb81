// Throwaway prototype: shell webview + View webviews in a clipping layer over it.
use gtk::prelude::*;
use tao::event::Event;
use tao::event_loop::{ControlFlow, EventLoopBuilder};
use tao::platform::unix::WindowExtUnix;
use tao::window::WindowBuilder;
use webkit2gtk::WebViewExt;
use wry::{WebViewBuilder, WebViewBuilderExtUnix, WebViewExtUnix};

fn main() {
    gtk::init().unwrap();
    let event_loop = EventLoopBuilder::<()>::with_user_event().build();
    let window = WindowBuilder::new().with_inner_size(tao::dpi::LogicalSize::new(900.0, 600.0)).build(&event_loop).unwrap();
    let vbox = window.default_vbox().unwrap();
    let overlay = gtk::Overlay::new();
    vbox.pack_start(&overlay, true, true, 0);
    let mut ctx = wry::WebContext::new(None);
    let t0 = std::time::Instant::now();
    let log = move |who: &str, body: &str| println!("{:>7.3} {who} {body}", t0.elapsed().as_secs_f64());
    let shell_html = r#"<html><body style="margin:0;background:#eef">
<button id=b style="position:absolute;left:10px;top:10px;width:200px;height:60px">shell button</button>
<div style="position:absolute;left:100px;top:100px;width:700px;height:400px;background:#ccc">stream</div>
<script>
document.getElementById('b').onclick=()=>window.ipc.postMessage('click-top');
document.body.addEventListener('click',e=>window.ipc.postMessage('click '+e.clientX+','+e.clientY));
let last=Date.now(); setInterval(()=>{let n=Date.now(); if(n-last>400) window.ipc.postMessage('gap '+(n-last)); last=n;},100);
</script></body></html>"#;
    let shell = WebViewBuilder::new_with_web_context(&mut ctx)
        .with_html(shell_html)
        .with_ipc_handler(move |r| log("shell", r.body()))
        .build_gtk(&overlay)
        .unwrap();
    let layer = gtk::Layout::new(None::<&gtk::Adjustment>, None::<&gtk::Adjustment>);
    layer.set_halign(gtk::Align::Start);
    layer.set_valign(gtk::Align::Start);
    layer.set_margin_start(100);
    layer.set_margin_top(100);
    layer.set_size_request(700, 400);
    overlay.add_overlay(&layer);
    overlay.set_overlay_pass_through(&layer, true);
    let apply = |l: &gtk::Layout| {
        eprintln!("realize layer: window {:?} bin {:?}", l.window().is_some(), l.bin_window().is_some());
        if let Some(w) = l.window() { w.set_pass_through(true); }
        if let Some(w) = l.bin_window() { w.set_pass_through(true); }
        if let Some(p) = l.window().and_then(|w| w.parent()) { eprintln!("parent pass {}", p.is_pass_through()); }
    };
    apply(&layer);
    layer.connect_map(move |l| apply(l));
    let view_html = |name: &str, color: &str| format!(r#"<html><body style="margin:0;background:{color}" onclick="window.ipc.postMessage('click {name} '+event.clientX+','+event.clientY)">
<h3>{name}</h3><script>
let last=Date.now(); setInterval(()=>{{let n=Date.now(); if(n-last>400) window.ipc.postMessage('gap '+(n-last)); last=n;}},100);
setInterval(()=>window.ipc.postMessage('tick'),1000);
if (location.hash==='#loop' || '{name}'==='B1') setTimeout(()=>{{window.ipc.postMessage('looping'); let e=Date.now()+6000; while(Date.now()<e){{}} window.ipc.postMessage('loop done');}},3000);
</script></body></html>"#);
    let mk = |name: &'static str, color: &str, related: Option<&wry::WebView>, ctx: &mut wry::WebContext| {
        let mut b = WebViewBuilder::new_with_web_context(ctx).with_html(view_html(name, color)).with_ipc_handler(move |r| log(name, r.body()));
        if let Some(r) = related { b = b.with_related_view(r.webview()); }
        let wv = b.build_gtk(&layer).unwrap();
        wv
    };
    let a1 = mk("A1", "#fcc", None, &mut ctx);
    let a2 = mk("A2", "#faa", Some(&a1), &mut ctx);
    let b1 = mk("B1", "#cfc", None, &mut ctx);
    for (i, v) in [&a1, &a2, &b1].iter().enumerate() {
        let w = v.webview();
        w.set_size_request(300, 150);
        layer.move_(&w, 20 + (i as i32 % 2) * 340, 20 + (i as i32 / 2) * 200);
    }
    // partially clipped: B1 straddles the layer's bottom edge
    layer.move_(&b1.webview(), 20, 320);
    window.set_visible(true); layer.show(); apply(&layer);
    let _keep = (shell, a1, a2, b1);
    event_loop.run(move |event, _, cf| {
        *cf = ControlFlow::Wait;
        if let Event::WindowEvent { event: tao::event::WindowEvent::CloseRequested, .. } = event { *cf = ControlFlow::Exit; }
    });
}
