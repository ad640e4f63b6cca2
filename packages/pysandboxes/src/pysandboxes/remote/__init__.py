"""Partial mode's transport: the child process, the channel, and the codec that guards it.

Arguments travel host → child (trusted); results and exceptions travel child → host and
are decoded by the result guard (:mod:`pysandboxes.remote.codec`), because the child may
be running hostile code.
"""
