from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "liveguard._canon",
            ["backend/liveguard/_canon.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
