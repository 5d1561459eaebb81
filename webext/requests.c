/*
 * mcp-apps-host's check of every request below the page (part of the host's web process
 * extension, see collect.c).
 *
 * A View's CSP is the first wall, but an engine path that forgets to ask it (measured: the
 * static `import` of a blob: AudioWorklet module reached an undeclared loopback URL with
 * `connect-src 'none'`) would let data leave the sandbox. So every request a page of the host
 * sends goes through WebKitWebPage's `send-request` here, and is cancelled unless it goes to:
 * - the host's own schemes and local ones (mcp-sandbox, mcp-host, data, blob, about), or
 * - an origin the page's View declared (`_meta.ui.csp`: connect, resource and frame domains),
 *   which the host sends the page in a user message (MESSAGE) as "scheme host port" entries
 *   (host may start with "*.", port may be "*"), once the page holds a View.
 * A page the host told nothing (the shell, a proxy page made in advance, a blank page) gets
 * only the first kind. Each cancelled request is written to stderr with its origin only.
 *
 * MCP_APPS_HOST_TEST_NO_REQUEST_CHECK (tests only) switches the check off, so a test can prove
 * that `check --self` notices a host without it.
 */
#include <stdlib.h>
#include <string.h>
#include <webkit2/webkit-web-extension.h>

#include "requests.h"

/* The name of the host's message that carries a page's declared origins. */
#define MESSAGE "mcp-apps-host:allowed-origins"
#define ALLOWED_KEY "mcp-apps-host-allowed-origins"

static gboolean check_off;

static const char *const LOCAL_SCHEMES[] = {"mcp-sandbox", "mcp-host", "data", "blob", "about", NULL};

/* ws and wss ask what http and https would (CSP matches them alike). */
static const char *web_scheme(const char *scheme)
{
    if (g_ascii_strcasecmp(scheme, "ws") == 0)
        return "http";
    if (g_ascii_strcasecmp(scheme, "wss") == 0)
        return "https";
    return scheme;
}

static int default_port(const char *scheme)
{
    return g_ascii_strcasecmp(web_scheme(scheme), "https") == 0 ? 443 : 80;
}

/* Whether the request at scheme://host:port matches one "scheme host port" entry. */
static gboolean entry_matches(const char *entry, const char *scheme, const char *host, int port)
{
    gchar **part = g_strsplit(entry, " ", 3);
    gboolean ok = FALSE;
    if (g_strv_length(part) == 3) {
        const char *es = web_scheme(part[0]);
        const char *rs = web_scheme(scheme);
        /* An http source also allows https, as in CSP; never the other way round. */
        gboolean scheme_ok = g_ascii_strcasecmp(es, rs) == 0 ||
                             (g_ascii_strcasecmp(es, "http") == 0 && g_ascii_strcasecmp(rs, "https") == 0);
        gboolean host_ok;
        if (g_str_has_prefix(part[1], "*.")) {
            size_t suffix = strlen(part[1]) - 1, len = strlen(host);
            host_ok = len > suffix && g_ascii_strcasecmp(host + len - suffix, part[1] + 1) == 0;
        } else {
            host_ok = g_ascii_strcasecmp(host, part[1]) == 0;
        }
        gboolean port_ok = strcmp(part[2], "*") == 0 || atoi(part[2]) == port ||
                           (atoi(part[2]) == default_port(part[0]) && port == default_port(scheme));
        ok = scheme_ok && host_ok && port_ok;
    }
    g_strfreev(part);
    return ok;
}

static gboolean allowed(WebKitWebPage *page, const char *uri)
{
    gchar *scheme = g_uri_parse_scheme(uri);
    if (!scheme)
        return FALSE;
    gboolean ok = g_strv_contains(LOCAL_SCHEMES, scheme);
    g_free(scheme);
    if (ok)
        return TRUE;
    GUri *parsed = g_uri_parse(uri, G_URI_FLAGS_ENCODED | G_URI_FLAGS_NON_DNS, NULL);
    if (!parsed)
        return FALSE;
    const char *rs = g_uri_get_scheme(parsed), *host = g_uri_get_host(parsed);
    gchar **entries = g_object_get_data(G_OBJECT(page), ALLOWED_KEY);
    gboolean web = g_strv_contains((const char *const[]){"http", "https", "ws", "wss", NULL}, rs);
    if (web && host && entries) {
        int port = g_uri_get_port(parsed) > 0 ? g_uri_get_port(parsed) : default_port(rs);
        for (gchar **e = entries; *e && !ok; e++)
            ok = entry_matches(*e, rs, host, port);
    }
    if (!ok) {
        int port = g_uri_get_port(parsed);
        g_printerr("mcp-apps-host: blocked a request below the page to %s://%s%s%.0d (not an origin the View declared)\n",
                   rs, host ? host : "", port > 0 ? ":" : "", port > 0 ? port : 0);
    }
    g_uri_unref(parsed);
    return ok;
}

static gboolean send_request(WebKitWebPage *page, WebKitURIRequest *request, WebKitURIResponse *redirected,
                             gpointer data)
{
    (void)redirected;
    (void)data;
    const char *uri = webkit_uri_request_get_uri(request);
    /* TRUE cancels the request. */
    return !(uri && allowed(page, uri));
}

static gboolean message_received(WebKitWebPage *page, WebKitUserMessage *message, gpointer data)
{
    (void)data;
    if (g_strcmp0(webkit_user_message_get_name(message), MESSAGE) != 0)
        return FALSE;
    GVariant *origins = webkit_user_message_get_parameters(message);
    if (origins && g_variant_is_of_type(origins, G_VARIANT_TYPE_STRING_ARRAY)) {
        g_object_set_data_full(G_OBJECT(page), ALLOWED_KEY, g_variant_dup_strv(origins, NULL),
                               (GDestroyNotify)g_strfreev);
    }
    return TRUE;
}

void requests_init(void)
{
    check_off = g_getenv("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK") != NULL;
}

void requests_watch_page(WebKitWebPage *page)
{
    if (check_off)
        return;
    g_signal_connect(page, "send-request", G_CALLBACK(send_request), NULL);
    g_signal_connect(page, "user-message-received", G_CALLBACK(message_received), NULL);
}
