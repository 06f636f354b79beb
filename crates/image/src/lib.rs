//! ext images through libext2fs: materialize a Plan into an image, inspect any ext image back into the same model.
