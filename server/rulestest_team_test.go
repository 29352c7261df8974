package server

import "testing"

// The rules test's team (§15): the body's, else the team of the loaded DAG dag_id names.
func TestRulesTestTeam(t *testing.T) {
	t.Parallel()
	teams := func(id string) string { return map[string]string{"fin": "finance"}[id] }
	sales := "sales"
	for _, tc := range []struct {
		body rulesTestBody
		want string
	}{
		{rulesTestBody{DAGID: "fin"}, "finance"},
		{rulesTestBody{DAGID: "fin", Team: &sales}, "sales"},
		{rulesTestBody{DAGID: "other"}, ""},
		{rulesTestBody{Team: &sales}, "sales"},
	} {
		a, err := tc.body.attrs(teams)
		if err != nil || a.Team != tc.want {
			t.Errorf("%+v: team %q (%v), want %q", tc.body, a.Team, err, tc.want)
		}
	}
}
