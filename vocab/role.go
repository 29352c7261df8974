package vocab

// Role is what a user may do (§15): each role holds the permissions of the one before it.
type Role string

const (
	RoleViewer   Role = "viewer"   // reads and logs
	RoleOperator Role = "operator" // a viewer who also triggers, repairs, approves, cancels, pauses and backfills
	RoleAdmin    Role = "admin"    // an operator who also manages pools, users and every token
)

// Roles lists every role, the weakest first.
func Roles() []Role { return []Role{RoleViewer, RoleOperator, RoleAdmin} }

// Valid reports whether r is a role.
func (r Role) Valid() bool { return in(r, Roles()) }

// Rank orders the roles: viewer 1, operator 2, admin 3; 0 for no role.
func (r Role) Rank() int {
	for i, x := range Roles() {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// Permission is what one route or command needs (§15): every HTTP route names one in the
// server's route table and every CLI write checks one. A 403 names it.
type Permission string

const (
	PermPublic   Permission = "public"   // anyone, signed in or not: health, probes, the OpenAPI document
	PermRead     Permission = "read"     // DAGs, runs, task instances, pools, events, metrics
	PermLogs     Permission = "logs"     // attempt logs
	PermOwnToken Permission = "account"  // one's own account: sign-out, one's own API tokens
	PermTrigger  Permission = "trigger"  // start a run
	PermPause    Permission = "pause"    // pause and unpause a DAG
	PermRepair   Permission = "repair"   // clear, mark, note and delete runs and task instances
	PermApprove  Permission = "approve"  // approve and reject approval gates
	PermCancel   Permission = "cancel"   // cancel a waiting entry, fail or force-start a task
	PermBackfill Permission = "backfill" // create and steer backfills
	PermNotify   Permission = "notify"   // send a notifier a test notification (§13)
	PermPools    Permission = "pools"    // create, change and delete pools (seed 003)
	PermUsers    Permission = "users"    // manage users and everyone's tokens
	PermHistory  Permission = "history"  // delete history (poolflow db clean)
)

// Permissions lists every permission, by the role that first holds it.
func Permissions() []Permission {
	return []Permission{PermPublic, PermRead, PermLogs, PermOwnToken, PermTrigger, PermPause, PermRepair, PermApprove,
		PermCancel, PermBackfill, PermNotify, PermPools, PermUsers, PermHistory}
}

// Valid reports whether p is a permission.
func (p Permission) Valid() bool { return in(p, Permissions()) }

// Role is the weakest role that holds p; "" for PermPublic, which needs none.
func (p Permission) Role() Role {
	switch p {
	case PermPublic:
		return ""
	case PermRead, PermLogs, PermOwnToken:
		return RoleViewer
	case PermPools, PermUsers, PermHistory:
		return RoleAdmin
	default:
		return RoleOperator
	}
}

// Allows reports whether role r holds permission p.
func (r Role) Allows(p Permission) bool {
	return r.Rank() >= p.Role().Rank() && (p == PermPublic || r.Valid())
}

// NoRole is how poolflow.yaml (auth.anonymous) and listings spell the absence of a role.
const NoRole = "none"

// TokenState is an API token's state as listings show it.
type TokenState string

const (
	TokenActive  TokenState = "active"  // in force
	TokenExpired TokenState = "expired" // past its expiry
	TokenRevoked TokenState = "revoked" // revoked by its user or an admin
)
