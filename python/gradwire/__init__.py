"""gradwire for PyTorch: gradwire's gradient compressors as DDP communication hooks.

    import gradwire.torch
    state, hook = gradwire.torch.hook(model, compressor="dgc", momentum=0.9)
    ddp_model.register_comm_hook(state, hook)

See gradwire.torch and docs/PYTORCH.md.
"""
