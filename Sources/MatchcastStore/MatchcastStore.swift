// Storage protocols and implementations arrive with the broker (issue 3).
