// Package ui is poolflow's server-side rendered web UI (§7.3): templates and static assets
// embedded in the binary, and the page handlers that read the server's read models.
package ui
