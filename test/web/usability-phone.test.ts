// The character sheet for people (test/web/usability.ts) at a phone's size (390×844).
import { usabilitySuite } from './usability.ts';

usabilitySuite({ width: 390, height: 844 });
