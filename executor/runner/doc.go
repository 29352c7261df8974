// Package runner runs the attempts a pass admitted: a command or bash script as a process
// group of its own (in its own session, with the daemon as the child subreaper of what it
// leaves behind, and in a cgroup of its own where cgroup v2 is writable), a Go function, a
// sensor's pokes. It writes each attempt's output to its log and posts its start and end back
// as attempt.Started and attempt.Ended events; it takes an immutable attempt.Spec and cannot
// reach the scheduler's memory.
//
// It also holds what a daemon does to processes on its host: the environment tags every
// attempt carries (POOLFLOW_DAEMON_ID, POOLFLOW_DAEMON_EPOCH, POOLFLOW_STORE,
// POOLFLOW_ATTEMPT), finding and killing the process groups of an owner by them and its attempt
// cgroups by their names (a restart, a takeover), and the watchdog process that kills a
// daemon's attempts when the daemon dies.
package runner
