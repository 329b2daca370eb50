"""Developer tools that are not part of the server: generators of the project's data modules."""
