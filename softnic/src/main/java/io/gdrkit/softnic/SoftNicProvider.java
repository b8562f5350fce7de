/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.VerbsProvider;
import java.util.ArrayList;
import java.util.List;

/** Lists the software NICs of every live {@link SoftNicDriver} in this JVM. */
public final class SoftNicProvider implements VerbsProvider {
    @Override
    public String name() {
        return "softnic";
    }

    @Override
    public List<Device> devices() {
        final List<Device> all = new ArrayList<>();
        for (final SoftNicDriver d : SoftNicDriver.live()) {
            all.addAll(d.devices());
        }
        return all;
    }
}
