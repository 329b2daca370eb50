"""Admission control, the pure part: which requests a policy or webhook applies to (`matching`)
and admission policy evaluation (`policies`). The plugins that run them are in `api/admission/`."""
