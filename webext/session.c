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
 * without a session) runs nothing from here. The test interface (`run --test-interface`) asks
 * two more things, and only of a View its runner displayed: the iframes of the document that
 * holds the View's frame (INSPECT), and a runner's script evaluated in the View's frame
 * (EVALUATE, in the View's own world: a runner reaches its harness there, as a browser
 * automation's frame evaluation does).
 */
#include <stdlib.h>
#include <string.h>
#include <jsc/jsc.h>
#include <webkit2/webkit-web-extension.h>

#include "session.h"

#define FIND "mcp-apps-host:find"
#define TEXT "mcp-apps-host:text"
/* The test interface only (`run --test-interface`): the View's frame tree, and a runner's script. */
#define INSPECT "mcp-apps-host:inspect-frame"
#define EVALUATE "mcp-apps-host:evaluate"
/* The most an evaluation's JSON answer may hold (the View makes it: it is bounded here). */
#define MAX_ANSWER (1024 * 1024)
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

/* In a document that holds frames: its <iframe> elements, and the first sandboxed one's flags. */
static const char IFRAMES[] =
    "(function () {"
    "  const all = Array.from(document.querySelectorAll('iframe'));"
    "  const sandboxed = all.filter(f => f.hasAttribute('sandbox'));"
    "  return JSON.stringify({ total: all.length, sandboxed: sandboxed.length,"
    "    firstSandbox: sandboxed.length ? sandboxed[0].getAttribute('sandbox') : null, origin: location.origin });"
    "})()";

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

/* INSPECT: the iframes of the document that holds the View's frame (the proxy page), and of the
 * top document that holds the proxy's. Read in the host's world, so the View's scripts cannot
 * change how they are read (only the proxy's DOM, which the View shares an origin with). */
static void inspect(WebKitWebPage *page, WebKitUserMessage *message)
{
    WebKitFrame *top = frame_at(page, 0), *proxy = frame_at(page, 1);
    if (!proxy) {
        reply(message, "{\"error\":\"the page holds no proxy frame\"}");
        return;
    }
    gchar *inner = evaluate(proxy, IFRAMES);
    gchar *outer = top ? evaluate(top, IFRAMES) : NULL;
    gchar *json = g_strdup_printf("{\"holder\":%s,\"top\":%s}", inner ? inner : "null", outer ? outer : "null");
    reply(message, json);
    g_free(json);
    g_free(inner);
    g_free(outer);
}

/* One evaluation's answer, sent once: `v` and the value as JSON (nothing for undefined), or `e`
 * and why it failed. A promise's callbacks share it, and the View's realm decides whether they
 * run at all, or how often. */
typedef struct {
    WebKitUserMessage *message;
    gboolean answered;
    int holders;
} Evaluation;

static void answer(Evaluation *e, char kind, const char *text)
{
    if (e->answered)
        return;
    e->answered = TRUE;
    gchar *out = g_strdup_printf("%c%s", kind, text ? text : "");
    if (strlen(out) > MAX_ANSWER + 1) {
        g_free(out);
        out = g_strdup("ethe value's JSON is over 1 MiB");
    }
    webkit_user_message_send_reply(e->message, webkit_user_message_new(EVALUATE, g_variant_new_take_string(out)));
}

static gboolean evaluation_end(gpointer data)
{
    Evaluation *e = data;
    answer(e, 'e', "the script's promise was collected unsettled (the View's realm decides whether it settles)");
    g_object_unref(e->message);
    g_free(e);
    return G_SOURCE_REMOVE;
}

static void evaluation_release(gpointer data)
{
    Evaluation *e = data;
    if (--e->holders > 0)
        return;
    /* This may run inside a collection (a promise's callbacks collected unsettled): the answer
     * goes from the main loop. */
    g_idle_add(evaluation_end, e);
}

static void answer_value(Evaluation *e, JSCValue *value)
{
    JSCContext *context = jsc_value_get_context(value);
    jsc_context_clear_exception(context);
    gchar *json = jsc_value_is_undefined(value) ? NULL : jsc_value_to_json(value, 0);
    JSCException *thrown = jsc_context_get_exception(context);
    if (thrown)
        answer(e, 'e', jsc_exception_get_message(thrown));
    else
        answer(e, 'v', json);
    g_free(json);
}

static void promise_fulfilled(JSCValue *value, gpointer data)
{
    answer_value(data, value);
}

static void promise_rejected(JSCValue *reason, gpointer data)
{
    gchar *text = jsc_value_to_string(reason);
    gchar *why = g_strdup_printf("the script's promise was rejected: %s", text ? text : "");
    answer(data, 'e', why);
    g_free(why);
    g_free(text);
}

/* EVALUATE: a runner's script in the View's frame, in the View's own world (where its harness
 * lives); its value as JSON, a promise's once it settles. Only the host's process sends this
 * message (a page cannot send user messages), and only for `run --test-interface`. */
static void evaluate_in_view(WebKitWebPage *page, WebKitUserMessage *message, const char *script)
{
    WebKitFrame *view = frame_at(page, 2);
    if (!view) {
        webkit_user_message_send_reply(message, webkit_user_message_new(EVALUATE, g_variant_new_string("ethe page holds no View")));
        return;
    }
    Evaluation *e = g_new0(Evaluation, 1);
    e->message = g_object_ref(message);
    e->holders = 1;
    JSCContext *context = webkit_frame_get_js_context(view);
    jsc_context_clear_exception(context);
    JSCValue *value = jsc_context_evaluate(context, script, -1);
    JSCException *thrown = jsc_context_get_exception(context);
    if (thrown) {
        gchar *why = g_strdup_printf("the script threw: %s", jsc_exception_get_message(thrown));
        answer(e, 'e', why);
        g_free(why);
    } else if (value && jsc_value_is_object(value) && jsc_value_object_has_property(value, "then")) {
        JSCValue *then = jsc_value_object_get_property(value, "then");
        if (then && jsc_value_is_function(then)) {
            e->holders += 2;
            JSCValue *ok = jsc_value_new_function(context, NULL, G_CALLBACK(promise_fulfilled), e, evaluation_release,
                                                  G_TYPE_NONE, 1, JSC_TYPE_VALUE);
            JSCValue *failed = jsc_value_new_function(context, NULL, G_CALLBACK(promise_rejected), e,
                                                      evaluation_release, G_TYPE_NONE, 1, JSC_TYPE_VALUE);
            JSCValue *r = jsc_value_object_invoke_method(value, "then", JSC_TYPE_VALUE, ok, JSC_TYPE_VALUE, failed,
                                                         G_TYPE_NONE);
            g_clear_object(&r);
            g_object_unref(ok);
            g_object_unref(failed);
        } else {
            answer_value(e, value);
        }
        g_clear_object(&then);
    } else if (value) {
        answer_value(e, value);
    } else {
        answer(e, 'e', "the script gave no value");
    }
    g_clear_object(&value);
    g_object_unref(context);
    evaluation_release(e);
}

static gboolean message_received(WebKitWebPage *page, WebKitUserMessage *message, gpointer data)
{
    (void)data;
    const char *name = webkit_user_message_get_name(message);
    gboolean is_find = g_strcmp0(name, FIND) == 0, is_text = g_strcmp0(name, TEXT) == 0;
    GVariant *param = webkit_user_message_get_parameters(message);
    if (g_strcmp0(name, INSPECT) == 0) {
        inspect(page, message);
        return TRUE;
    }
    if (g_strcmp0(name, EVALUATE) == 0) {
        if (!param || !g_variant_is_of_type(param, G_VARIANT_TYPE_STRING))
            webkit_user_message_send_reply(message, webkit_user_message_new(EVALUATE, g_variant_new_string("eno script")));
        else
            evaluate_in_view(page, message, g_variant_get_string(param, NULL));
        return TRUE;
    }
    if (!is_find && !is_text)
        return FALSE;
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
