package state

// The fields of the typed records as the fast decoder (fastjson.go) reads
// them: one setter per JSON key, spelled exactly as the struct tag, in the
// order encoding/json writes them (the decoder tries the next one first). A
// key missing here sends the record to encoding/json, so a field added to
// a record without its setter costs speed, never correctness.

var mailboxFields = fieldTable[Mailbox]{
	{"format_version", func(d *jdec, m *Mailbox) { m.FormatVersion = d.int() }},
	{"id", func(d *jdec, m *Mailbox) { m.ID = d.str() }},
	{"forge", func(d *jdec, m *Mailbox) { m.Forge = d.istr() }},
	{"owner", func(d *jdec, m *Mailbox) { m.Owner = d.istr() }},
	{"project", func(d *jdec, m *Mailbox) { m.Project = d.istr() }},
	{"kind", func(d *jdec, m *Mailbox) { m.Kind = Kind(d.istr()) }},
	{"iid", func(d *jdec, m *Mailbox) { m.IID = d.int64() }},
	{"title", func(d *jdec, m *Mailbox) { m.Title = d.str() }},
	{"status", func(d *jdec, m *Mailbox) { m.Status = d.istr() }},
	{"phase", func(d *jdec, m *Mailbox) { m.Phase = d.istr() }},
	{"branch_name", func(d *jdec, m *Mailbox) { m.BranchName = d.str() }},
	{"llm_retries", func(d *jdec, m *Mailbox) { m.LLMRetries = d.int() }},
	{"ci_fix_attempts", func(d *jdec, m *Mailbox) { m.CIFixAttempts = d.int() }},
	{"conflict_fix_attempts", func(d *jdec, m *Mailbox) { m.ConflictFixAttempts = d.int() }},
	{"labels", func(d *jdec, m *Mailbox) { m.Labels = d.strings() }},
	{"issue_url", func(d *jdec, m *Mailbox) { m.IssueURL = d.str() }},
	{"merge_request_iid", func(d *jdec, m *Mailbox) { m.MergeRequestIID = d.int64() }},
	{"merge_request_url", func(d *jdec, m *Mailbox) { m.MergeRequestURL = d.str() }},
	{"author", func(d *jdec, m *Mailbox) { m.Author = d.istr() }},
	{"flow", func(d *jdec, m *Mailbox) { m.Flow = d.istr() }},
	{"active_run_id", func(d *jdec, m *Mailbox) { m.ActiveRunID = d.str() }},
	{"until_green", func(d *jdec, m *Mailbox) { m.UntilGreen = d.bool() }},
	{"review_seen_id", func(d *jdec, m *Mailbox) { m.ReviewSeenID = d.int64() }},
	{"head_sha", func(d *jdec, m *Mailbox) { m.HeadSHA = d.str() }},
	{"quarantined", func(d *jdec, m *Mailbox) { d.nested(&m.Quarantined) }},
	{"created_at", func(d *jdec, m *Mailbox) { m.CreatedAt = d.time() }},
	{"updated_at", func(d *jdec, m *Mailbox) { m.UpdatedAt = d.time() }},
}

var runFields = fieldTable[Run]{
	{"format_version", func(d *jdec, r *Run) { r.FormatVersion = d.int() }},
	{"id", func(d *jdec, r *Run) { r.ID = d.str() }},
	{"mailbox_id", func(d *jdec, r *Run) { r.MailboxID = d.istr() }},
	{"phase", func(d *jdec, r *Run) { r.Phase = d.istr() }},
	{"trigger", func(d *jdec, r *Run) { r.Trigger = d.str() }},
	{"runner", func(d *jdec, r *Run) { r.Runner = d.istr() }},
	{"adapter_id", func(d *jdec, r *Run) { r.AdapterID = d.istr() }},
	{"provider", func(d *jdec, r *Run) { r.Provider = d.istr() }},
	{"model", func(d *jdec, r *Run) { r.Model = d.istr() }},
	{"worktree_path", func(d *jdec, r *Run) { r.WorktreePath = d.str() }},
	{"status", func(d *jdec, r *Run) { r.Status = RunStatus(d.istr()) }},
	{"outcome", func(d *jdec, r *Run) { r.Outcome = d.istr() }},
	{"created_at", func(d *jdec, r *Run) { r.CreatedAt = d.time() }},
	{"started_at", func(d *jdec, r *Run) { r.StartedAt = d.time() }},
	{"finished_at", func(d *jdec, r *Run) { r.FinishedAt = d.time() }},
	{"log", func(d *jdec, r *Run) { r.Log = d.str() }},
	{"input", func(d *jdec, r *Run) { r.Input = d.str() }},
	{"result", func(d *jdec, r *Run) { r.Result = d.str() }},
	{"pushed", func(d *jdec, r *Run) { r.Pushed = d.bool() }},
	{"head_sha", func(d *jdec, r *Run) { r.HeadSHA = d.str() }},
	{"nothing_to_do", func(d *jdec, r *Run) { r.NothingToDo = d.bool() }},
	{"no_session", func(d *jdec, r *Run) { r.NoSession = d.istr() }},
	{"gateway", func(d *jdec, r *Run) { d.nested(&r.Gateway) }},
}

var sessionFields = fieldTable[LLMSession]{
	{"format_version", func(d *jdec, s *LLMSession) { s.FormatVersion = d.int() }},
	{"id", func(d *jdec, s *LLMSession) { s.ID = d.str() }},
	{"run_id", func(d *jdec, s *LLMSession) { s.RunID = d.str() }},
	{"mailbox_id", func(d *jdec, s *LLMSession) { s.MailboxID = d.istr() }},
	{"adapter_id", func(d *jdec, s *LLMSession) { s.AdapterID = d.istr() }},
	{"provider", func(d *jdec, s *LLMSession) { s.Provider = d.istr() }},
	{"model", func(d *jdec, s *LLMSession) { s.Model = d.istr() }},
	{"input_tokens", func(d *jdec, s *LLMSession) { s.InputTokens = d.int64() }},
	{"output_tokens", func(d *jdec, s *LLMSession) { s.OutputTokens = d.int64() }},
	{"cost_usd", func(d *jdec, s *LLMSession) { s.CostUSD = d.float64() }},
	{"duration_ms", func(d *jdec, s *LLMSession) { s.DurationMS = d.int64() }},
	{"outcome", func(d *jdec, s *LLMSession) { s.Outcome = d.istr() }},
	{"session_name", func(d *jdec, s *LLMSession) { s.SessionName = d.strPtr() }},
	{"native_session_id", func(d *jdec, s *LLMSession) { s.NativeSessionID = d.strPtr() }},
	{"resumed", func(d *jdec, s *LLMSession) { s.Resumed = d.bool() }},
	{"resume_fallback", func(d *jdec, s *LLMSession) { s.ResumeFallback = d.strPtr() }},
	{"resume_of", func(d *jdec, s *LLMSession) { s.ResumeOf = d.strPtr() }},
	{"created_at", func(d *jdec, s *LLMSession) { s.CreatedAt = d.time() }},
}
