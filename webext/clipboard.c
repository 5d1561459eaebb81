/*
 * mcp-apps-host's guard of the clipboard in Views' pages (part of the host's web process
 * extension, see collect.c).
 *
 * What a View may do with the clipboard follows what it declared (`_meta.ui.permissions`): the
 * host sets it on the View's webview (src/desktop/engine.rs, `clipboard`): the Async Clipboard
 * API (`navigator.clipboard`) exists only in the page of a View that declared `clipboardWrite`,
 * and no View's page may read the clipboard from script (DOM paste access is off). What no
 * setting reaches is `document.execCommand("copy")` and `("cut")`, which WebKit runs on any
 * user gesture. So in every frame of a View's page (the host's top document, the proxy, the View
 * and any frame it makes), when its window object is made and before any of the page's scripts
 * run there, `Document.prototype.execCommand` becomes a function that refuses "copy" and "cut"
 * unless the frame was made with `navigator.clipboard` (its View declared `clipboardWrite`), and
 * "paste" always. It can be neither written over nor redefined; it uses only what it took
 * before the page ran (Reflect.apply, String.prototype.toLowerCase). The person's own copy
 * (Ctrl+C, a menu) is no script's execCommand and stays as it was.
 *
 * Pages other than a View's (the shell) are left alone.
 */
#include <jsc/jsc.h>
#include <webkit2/webkit-web-extension.h>

#include "clipboard.h"

/* The top documents of Views' pages (and the test topology's proxy pages on top). */
static const char *const VIEW_PAGES[] = {"mcp-host://frame/", "mcp-sandbox://", NULL};

static const char GUARD[] =
    "(function () {"
    "  var apply = Reflect.apply, lower = String.prototype.toLowerCase, string = String;"
    "  var original = Document.prototype.execCommand;"
    "  if (typeof original !== 'function') return;"
    "  var write = 'clipboard' in Navigator.prototype;"
    "  Object.defineProperty(Document.prototype, 'execCommand', {"
    "    value: function execCommand(command, showUI, value) {"
    "      var name = string(command);"
    "      var key = apply(lower, name, []);"
    "      if (key === 'paste' || (!write && (key === 'copy' || key === 'cut'))) return false;"
    "      return apply(original, this, [name, showUI, value]);"
    "    },"
    "    writable: false, configurable: false, enumerable: true"
    "  });"
    "})();";

static gboolean view_page(WebKitWebPage *page)
{
    const char *uri = webkit_web_page_get_uri(page);
    for (const char *const *p = VIEW_PAGES; uri && *p; p++) {
        if (g_str_has_prefix(uri, *p))
            return TRUE;
    }
    return FALSE;
}

static void window_cleared(WebKitScriptWorld *world, WebKitWebPage *page, WebKitFrame *frame, gpointer data)
{
    (void)data;
    if (!view_page(page))
        return;
    JSCContext *context = webkit_frame_get_js_context_for_script_world(frame, world);
    if (!context)
        return;
    JSCValue *done = jsc_context_evaluate(context, GUARD, -1);
    JSCException *exception = jsc_context_get_exception(context);
    if (exception) {
        g_printerr("mcp-apps-host: the clipboard guard failed in a frame of a View: %s\n",
                   jsc_exception_get_message(exception));
        jsc_context_clear_exception(context);
    }
    g_clear_object(&done);
    g_object_unref(context);
}

void clipboard_init(void)
{
    g_signal_connect(webkit_script_world_get_default(), "window-object-cleared", G_CALLBACK(window_cleared), NULL);
}
