"""placeholder"""
def start_live(bundle, rate):
    raise NotImplementedError
