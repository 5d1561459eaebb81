/* The check of every request below the page (requests.c). */
#ifndef MCP_APPS_HOST_REQUESTS_H
#define MCP_APPS_HOST_REQUESTS_H

#include <webkit2/webkit-web-extension.h>

/* Reads the test switch; once, when the extension starts. */
void requests_init(void);
/* Checks every request the page sends from now on. */
void requests_watch_page(WebKitWebPage *page);

#endif
