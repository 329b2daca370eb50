"""Calling webhooks: the HTTPS transport admission webhooks and CRD conversion webhooks share
(`client`: a `clientConfig` resolved to a URL or to a Service's endpoint, its CA bundle and timeout)
and the CRD conversion webhook protocol (`conversion`: `ConversionReview` apiextensions.k8s.io/v1)."""
