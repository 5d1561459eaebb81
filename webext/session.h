/* Interaction sessions: where an element of a View is, and what it shows (session.c). */
#ifndef MCP_APPS_HOST_SESSION_H
#define MCP_APPS_HOST_SESSION_H

#include <webkit2/webkit-web-extension.h>

/* Makes the host's script world and watches every frame; once, when the extension starts. */
void session_init(void);
/* Answers the host's FIND, TEXT, INSPECT and EVALUATE messages for the page. */
void session_watch_page(WebKitWebPage *page);

#endif
