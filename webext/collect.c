/*
 * mcp-apps-host's web process extension (loaded by WebKit into each web process of the host).
 *
 * When a page of the process goes (a View closed, or asleep: see src/app/hibernation.rs), its
 * documents are garbage, but JavaScriptCore collects them at its own pace: an idle process
 * allocates nothing, so nothing starts a collection, and measured, the memory of 36 Views that
 * went stayed for more than 10 s. Here, once no page went for half a second, one full collection
 * runs in the process, and then the allocator is told to give the freed memory back.
 *
 * A full collection blocks the process while it runs, and its time grows with the pages that
 * are still there (measured: 0.5 s with 21 pages, 0.8 s with 97; with 100 Views, collections
 * at the wrong moment kept the process past the host's 1.5 s hang limit). So it runs only
 * while the process holds MAX_PAGES pages or fewer: the live Views of a long conversation
 * (10 by default, and those near sight), not a crowd still opening.
 *
 * The collection reads no page's content and changes none. The same library checks every request of its
 * pages against the origins their View declared (requests.c), answers an interaction
 * session's questions about a View (session.c), and keeps script copies off the clipboard in
 * the frames of a View that did not declare clipboardWrite (clipboard.c).
 */
#define _GNU_SOURCE
#define G_LOG_DOMAIN "mcp-apps-host-collect"
#include <dlfcn.h>
#include <webkit2/webkit-web-extension.h>
#include <JavaScriptCore/JavaScript.h>

#include "clipboard.h"
#include "requests.h"
#include "session.h"

/* Exported by JavaScriptCore (JSContextRefPrivate.h): a full, synchronous collection. */
extern void JSSynchronousGarbageCollectForDebugging(JSContextRef ctx);

/*
 * How long after the last page went the collection runs. Views fall asleep four at a time,
 * the next as soon as one is done (src/app/hibernation.rs), so a run of sleeps makes one.
 */
#define COLLECT_AFTER_MS 500

/* The most pages a process may hold for the collection to run. */
#define MAX_PAGES 32

static GPtrArray *pages;
static guint pending;

/*
 * WTF::releaseFastMallocFreeMemory(), exported by JavaScriptCore without a header: the
 * allocator's scavenger, run now. Without it the freed heap goes back to the system at the
 * scavenger's own pace (measured: not yet 0.2 s after a collection). Looked up, not linked,
 * so that a WebKit without it still loads the extension and only collects.
 *
 * It runs on a thread of its own (the allocator's own scavenger runs on one too): measured
 * at 330 ms after a collection of 20 pages, time the process's main thread, which answers
 * WebKit's responsiveness checks, does not spend.
 */
static void (*release_free_memory)(void);
static gint releasing;

/*
 * With MCP_APPS_HOST_COLLECT_LOG set, each collection and release is written to stderr (the
 * web process does not write GLib's debug messages, whatever G_MESSAGES_DEBUG says).
 */
static gboolean log_collections;
#define LOG(...)                   \
    do {                           \
        if (log_collections)       \
            g_message(__VA_ARGS__); \
    } while (0)

static gpointer release(gpointer data)
{
    (void)data;
    gint64 start = g_get_monotonic_time();
    release_free_memory();
    LOG("freed memory released in %" G_GINT64_FORMAT " ms", (g_get_monotonic_time() - start) / 1000);
    g_atomic_int_set(&releasing, 0);
    return NULL;
}

static gboolean collect(gpointer data)
{
    (void)data;
    pending = 0;
    if (pages->len > MAX_PAGES)
        return G_SOURCE_REMOVE; /* Views opened meanwhile: the next page that goes asks again. */
    /* One VM per process: any page's context collects the whole heap. */
    gint64 start = g_get_monotonic_time();
    gboolean collected = FALSE;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    for (guint i = 0; i < pages->len && !collected; i++) {
        WebKitFrame *frame = webkit_web_page_get_main_frame(g_ptr_array_index(pages, i));
        JSGlobalContextRef context = frame ? webkit_frame_get_javascript_global_context(frame) : NULL;
        if (context) {
            JSSynchronousGarbageCollectForDebugging(context);
            collected = TRUE;
        }
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    if (!collected)
        return G_SOURCE_REMOVE;
    LOG("collected with %u pages in %" G_GINT64_FORMAT " ms", pages->len, (g_get_monotonic_time() - start) / 1000);
    /* One release at a time (the allocator's own scavenger returns what one running misses). */
    if (release_free_memory && g_atomic_int_compare_and_exchange(&releasing, 0, 1)) {
        GError *error = NULL;
        GThread *thread = g_thread_try_new("mcp-release", release, NULL, &error);
        if (thread) {
            g_thread_unref(thread);
        } else {
            g_atomic_int_set(&releasing, 0);
            g_warning("no thread to release the collected memory: %s", error->message);
            g_error_free(error);
        }
    }
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
    requests_watch_page(page);
    session_watch_page(page);
}

G_MODULE_EXPORT void webkit_web_extension_initialize(WebKitWebExtension *extension)
{
    pages = g_ptr_array_new();
    release_free_memory = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN3WTF27releaseFastMallocFreeMemoryEv");
    log_collections = g_getenv("MCP_APPS_HOST_COLLECT_LOG") != NULL;
    requests_init();
    session_init();
    clipboard_init();
    g_signal_connect(extension, "page-created", G_CALLBACK(page_created), NULL);
}
