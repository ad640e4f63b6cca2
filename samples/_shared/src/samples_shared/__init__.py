"""What the PySandboxes samples share: the tool bodies (:mod:`samples_shared.tools`) and the
loopback servers and checks of their tests (:mod:`samples_shared.testing`)."""
