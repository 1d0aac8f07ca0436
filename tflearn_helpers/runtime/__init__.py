"""What must run before TensorFlow loads: the setup call, device planning, scale profiles."""
