// Package auth is who may do what (§15): users with bcrypt-hashed passwords, API tokens kept as
// SHA-256 hashes, the principal a request or a command acts as, its roles (viewer, operator,
// admin, optionally scoped to teams) and the permission check every HTTP route and CLI write
// goes through, and the throttle of failed sign-ins.
//
// Authentication is off while the installation has no user and no configured token: then
// every request acts as an open principal that may do everything, as poolflow always did on
// loopback (the server's Host and Origin checks still hold). The first user, or a token in
// poolflow.yaml, turns it on for every request.
package auth
