/*
 * mcp-apps-host's web process extension (loaded by WebKit into each web process of the host).
 *
 * When a page of the process goes (a View closed, or asleep: see src/app/hibernation.rs), its
 * documents are garbage, but JavaScriptCore collects them at its own pace: an idle process
 * allocates nothing, so nothing starts a collection, and measured, the memory of 36 Views that
 * went stayed for more than 10 s. Here, once no page went for a second, one full collection
 * runs in the process, and the allocator gives the freed memory back.
 *
 * A full collection blocks the process while it runs, and its time grows with the pages that
 * are still there (measured: 0.5 s with 21 pages, 0.8 s with 97; with 100 Views, collections
 * at the wrong moment kept the process past the host's 1.5 s hang limit). So it runs only
 * while the process holds MAX_PAGES pages or fewer: the live Views of a long conversation
 * (10 by default, and those near sight), not a crowd still opening.
 *
 * It does nothing else: no page's content is read or changed, and no message is taken from a
 * page or from the host.
 */
#include <webkit2/webkit-web-extension.h>
#include <JavaScriptCore/JavaScript.h>

/* Exported by JavaScriptCore (JSContextRefPrivate.h): a full, synchronous collection. */
extern void JSSynchronousGarbageCollectForDebugging(JSContextRef ctx);

/* How long after the last page went the collection runs (a burst of closes makes one). */
#define COLLECT_AFTER_MS 1000

/* The most pages a process may hold for the collection to run. */
#define MAX_PAGES 32

static GPtrArray *pages;
static guint pending;

static gboolean collect(gpointer data)
{
    (void)data;
    pending = 0;
    if (pages->len > MAX_PAGES)
        return G_SOURCE_REMOVE; /* Views opened meanwhile: the next page that goes asks again. */
    /* One VM per process: any page's context collects the whole heap. */
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    for (guint i = 0; i < pages->len; i++) {
        WebKitFrame *frame = webkit_web_page_get_main_frame(g_ptr_array_index(pages, i));
        JSGlobalContextRef context = frame ? webkit_frame_get_javascript_global_context(frame) : NULL;
        if (context) {
            JSSynchronousGarbageCollectForDebugging(context);
            break;
        }
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    return G_SOURCE_REMOVE;
}

static void page_gone(gpointer data, GObject *page)
{
    (void)data;
    g_ptr_array_remove_fast(pages, page);
    if (pending)
        g_source_remove(pending);
    pending = pages->len && pages->len <= MAX_PAGES ? g_timeout_add(COLLECT_AFTER_MS, collect, NULL) : 0;
}

static void page_created(WebKitWebExtension *extension, WebKitWebPage *page, gpointer data)
{
    (void)extension;
    (void)data;
    g_ptr_array_add(pages, page);
    g_object_weak_ref(G_OBJECT(page), page_gone, NULL);
}

G_MODULE_EXPORT void webkit_web_extension_initialize(WebKitWebExtension *extension)
{
    pages = g_ptr_array_new();
    g_signal_connect(extension, "page-created", G_CALLBACK(page_created), NULL);
}
