/* The guard of the clipboard in the frames of Views' pages (clipboard.c). */
#ifndef MCP_APPS_HOST_CLIPBOARD_H
#define MCP_APPS_HOST_CLIPBOARD_H

/* Guards every frame of a View's page made from now on; once, when the extension starts. */
void clipboard_init(void);

#endif
