/*
 * mcp-apps-host's interaction sessions (part of the host's web process extension, see
 * collect.c): `check --session` and `run --session` click and type inside a View with real input
 * events, which the host sends to the View's webview where the person's would arrive. What it
 * needs from the page is where an element of the View is, and what text the View shows; the
 * View's page cannot tell it from the host, and the host cannot reach into a frame of another
 * origin. So the host asks here, in a user message (FIND or TEXT), and this answers it from the
 * page's frames, in a script world of its own (the View's scripts never see its functions or
 * variables).
 *
 * The frame tree of a View's page (src/desktop/frames.rs): the host's top page, the sandbox
 * proxy in its frame, the View in the proxy's frame. The View's frame is the one whose parent is
 * not the top but whose parent's parent is; the place of an element in the webview is its place
 * in that frame plus the place of each frame above it.
 *
 * Only the host's own process sends user messages to a page; a page that gets none (every run
 * without a session) runs nothing from here.
 */
#include <stdlib.h>
#include <string.h>
#include <jsc/jsc.h>
#include <webkit2/webkit-web-extension.h>

#include "session.h"

#define FIND "mcp-apps-host:find"
#define TEXT "mcp-apps-host:text"
#define FRAMES_KEY "mcp-apps-host-frames"

static WebKitScriptWorld *world;

/* Which frame of the tree a frame is, in the host's world: 0 the top, 1 the proxy, 2 the View. */
static const char DEPTH[] =
    "window === window.top ? 0 : window.parent === window.top ? 1 : window.parent.parent === window.top ? 2 : 3";

/* In the top page and the proxy: where the frame it holds starts, inside its border. */
static const char FRAME_AT[] =
    "(function () {"
    "  const f = document.querySelector('iframe');"
    "  if (!f) return null;"
    "  const r = f.getBoundingClientRect();"
    "  return JSON.stringify({ x: r.left + f.clientLeft, y: r.top + f.clientTop });"
    "})()";

/*
 * In the View: the element a target names ({"selector": CSS} or {"text": what it shows},
 * "nth" for the n-th of several, from 0), scrolled into the View's sight; its centre and size,
 * and what it is. Text matches whole (spaces folded) before it matches a part, and the deepest
 * element that matches wins (the button, not the page around it).
 */
static const char FIND_SCRIPT[] =
    "(function (t) {"
    "  const fold = s => (s || '').replace(/\\s+/g, ' ').trim();"
    "  const shown = e => e.getClientRects().length > 0;"
    "  const said = e => fold(e.innerText || e.value || e.getAttribute('aria-label') || e.getAttribute('title'));"
    "  let hits;"
    "  if (typeof t.selector === 'string') {"
    "    try { hits = Array.from(document.querySelectorAll(t.selector)); }"
    "    catch (e) { return JSON.stringify({ error: 'not a CSS selector: ' + t.selector }); }"
    "  } else if (typeof t.text === 'string') {"
    "    const want = fold(t.text);"
    "    const all = Array.from(document.querySelectorAll('body *')).filter(shown);"
    "    const deepest = (test) => all.filter(e => test(said(e)) && !Array.from(e.children).some(c => test(said(c))));"
    "    hits = deepest(s => s === want);"
    "    if (!hits.length) hits = deepest(s => s.includes(want));"
    "  } else {"
    "    return JSON.stringify({ error: 'a target needs a selector or a text' });"
    "  }"
    "  hits = hits.filter(shown);"
    "  const n = t.nth || 0;"
    "  if (hits.length <= n) return JSON.stringify({ error: 'not found', count: hits.length });"
    "  const e = hits[n];"
    "  e.scrollIntoView({ block: 'center', inline: 'center' });"
    "  const r = e.getBoundingClientRect();"
    "  return JSON.stringify({"
    "    x: r.left + r.width / 2, y: r.top + r.height / 2, width: r.width, height: r.height,"
    "    tag: e.tagName.toLowerCase(), says: said(e).slice(0, 80), count: hits.length,"
    "    viewport: { width: innerWidth, height: innerHeight } });"
    "})";

/* In the View: the text it shows (at most 64 KiB of it). */
static const char TEXT_SCRIPT[] = "(document.body ? document.body.innerText : '').slice(0, 65536)";

static void frame_gone(gpointer data, GObject *frame)
{
    g_ptr_array_remove_fast(data, frame);
}

static void frames_free(gpointer data)
{
    GPtrArray *frames = data;
    for (guint i = 0; i < frames->len; i++)
        g_object_weak_unref(g_ptr_array_index(frames, i), frame_gone, frames);
    g_ptr_array_free(frames, TRUE);
}

/* Every frame of every page is seen here when its document's window is made. */
static void window_cleared(WebKitScriptWorld *w, WebKitWebPage *page, WebKitFrame *frame, gpointer data)
{
    (void)w;
    (void)data;
    GPtrArray *frames = g_object_get_data(G_OBJECT(page), FRAMES_KEY);
    if (!frames) {
        frames = g_ptr_array_new();
        g_object_set_data_full(G_OBJECT(page), FRAMES_KEY, frames, frames_free);
    }
    if (!g_ptr_array_find(frames, frame, NULL)) {
        g_ptr_array_add(frames, frame);
        g_object_weak_ref(G_OBJECT(frame), frame_gone, frames);
    }
}

/* `script` evaluated in `frame`, in the host's world, as a new string (NULL when not a string). */
static gchar *evaluate(WebKitFrame *frame, const char *script)
{
    JSCContext *context = webkit_frame_get_js_context_for_script_world(frame, world);
    if (!context)
        return NULL;
    JSCValue *value = jsc_context_evaluate(context, script, -1);
    gchar *out = NULL;
    if (value && jsc_value_is_string(value))
        out = jsc_value_to_string(value);
    else if (value && jsc_value_is_number(value))
        out = g_strdup_printf("%d", jsc_value_to_int32(value));
    g_clear_object(&value);
    g_object_unref(context);
    return out;
}

/* The frame of the page at `depth` of the tree (see DEPTH), if there is one. */
static WebKitFrame *frame_at(WebKitWebPage *page, int depth)
{
    GPtrArray *frames = g_object_get_data(G_OBJECT(page), FRAMES_KEY);
    for (guint i = 0; frames && i < frames->len; i++) {
        WebKitFrame *frame = g_ptr_array_index(frames, i);
        gchar *d = evaluate(frame, DEPTH);
        gboolean match = d && atoi(d) == depth;
        g_free(d);
        if (match)
            return frame;
    }
    return NULL;
}

static void reply(WebKitUserMessage *message, const char *json)
{
    webkit_user_message_send_reply(message, webkit_user_message_new(webkit_user_message_get_name(message),
                                                                    g_variant_new_string(json)));
}

/* FIND: the element's place in the View, and the place of the View's frame and of the proxy's. */
static void find(WebKitWebPage *page, WebKitUserMessage *message, const char *target)
{
    WebKitFrame *view = frame_at(page, 2);
    if (!view) {
        reply(message, "{\"error\":\"the page holds no View\"}");
        return;
    }
    gchar *script = g_strdup_printf("%s(%s)", FIND_SCRIPT, target);
    gchar *found = evaluate(view, script);
    g_free(script);
    WebKitFrame *top = frame_at(page, 0), *proxy = frame_at(page, 1);
    gchar *top_at = top ? evaluate(top, FRAME_AT) : NULL;
    gchar *proxy_at = proxy ? evaluate(proxy, FRAME_AT) : NULL;
    gchar *json = g_strdup_printf("{\"found\":%s,\"proxy\":%s,\"view\":%s}", found ? found : "null",
                                  top_at ? top_at : "null", proxy_at ? proxy_at : "null");
    reply(message, json);
    g_free(json);
    g_free(found);
    g_free(top_at);
    g_free(proxy_at);
}

static gboolean message_received(WebKitWebPage *page, WebKitUserMessage *message, gpointer data)
{
    (void)data;
    const char *name = webkit_user_message_get_name(message);
    gboolean is_find = g_strcmp0(name, FIND) == 0, is_text = g_strcmp0(name, TEXT) == 0;
    if (!is_find && !is_text)
        return FALSE;
    GVariant *param = webkit_user_message_get_parameters(message);
    if (is_find) {
        if (!param || !g_variant_is_of_type(param, G_VARIANT_TYPE_STRING)) {
            reply(message, "{\"error\":\"no target\"}");
            return TRUE;
        }
        find(page, message, g_variant_get_string(param, NULL));
        return TRUE;
    }
    WebKitFrame *view = frame_at(page, 2);
    gchar *text = view ? evaluate(view, TEXT_SCRIPT) : NULL;
    if (text) {
        webkit_user_message_send_reply(message, webkit_user_message_new(TEXT, g_variant_new_take_string(text)));
    } else {
        reply(message, "");
    }
    return TRUE;
}

void session_init(void)
{
    world = webkit_script_world_new_with_name("mcp-apps-host-session");
    g_signal_connect(webkit_script_world_get_default(), "window-object-cleared", G_CALLBACK(window_cleared), NULL);
}

void session_watch_page(WebKitWebPage *page)
{
    g_signal_connect(page, "user-message-received", G_CALLBACK(message_received), NULL);
}
